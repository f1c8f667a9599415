//! The admin HTTP port (axum): the read-only JSON views of domain.md §8. Handlers never touch
//! the gatekeeper; they ask the state task over a channel and wait for its answer.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use tokio::sync::{mpsc, oneshot};

use super::Query;

/// Why an admin request failed, as a JSON body `{"error": "..."}`.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    /// The gatekeeper is shutting down.
    #[error("the gatekeeper is shutting down")]
    Unavailable,
}

impl IntoResponse for AdminError {
    fn into_response(self) -> Response {
        let status = match self {
            AdminError::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        };
        (
            status,
            Json(serde_json::json!({ "error": self.to_string() })),
        )
            .into_response()
    }
}

type Queries = mpsc::Sender<Query>;

async fn ask<T>(
    queries: &Queries,
    make: impl FnOnce(oneshot::Sender<T>) -> Query,
) -> Result<T, AdminError> {
    let (tx, rx) = oneshot::channel();
    queries
        .send(make(tx))
        .await
        .map_err(|_| AdminError::Unavailable)?;
    rx.await.map_err(|_| AdminError::Unavailable)
}

async fn clans(State(queries): State<Queries>) -> Result<impl IntoResponse, AdminError> {
    Ok(Json(ask(&queries, Query::Clans).await?))
}

async fn registrations(State(queries): State<Queries>) -> Result<impl IntoResponse, AdminError> {
    Ok(Json(ask(&queries, Query::Registrations).await?))
}

async fn not_found() -> impl IntoResponse {
    (
        StatusCode::NOT_FOUND,
        Json(
            serde_json::json!({ "error": "no such admin endpoint (try /api/clans or /api/registrations)" }),
        ),
    )
}

/// The live dashboard: one self-contained page, served from the binary.
const DASHBOARD: &str = include_str!("dashboard.html");

async fn dashboard() -> impl IntoResponse {
    axum::response::Html(DASHBOARD)
}

/// The admin routes.
fn router(queries: Queries) -> Router {
    Router::new()
        .route("/", get(dashboard))
        .route("/api/clans", get(clans))
        .route("/api/registrations", get(registrations))
        .fallback(not_found)
        .with_state(queries)
}

/// Serves the admin port until the task is aborted.
pub(super) async fn serve(listener: tokio::net::TcpListener, queries: Queries) {
    if let Err(error) = axum::serve(listener, router(queries)).await {
        tracing::error!(%error, "admin port stopped");
    }
}
