//! The exam's HTML timeline (`--html FILE`): one page, a section per endpoint with its
//! verdicts and every RAS message between it and the gatekeeper in time order, the
//! endpoint's on the left and the gatekeeper's on the right, each check's evidence marked.
//! Self-contained: no script, no outside resource.

use std::collections::HashSet;
use std::fmt::Write as _;

use crate::markup::escape;

use super::report::ExamReport;

/// The page.
pub fn html(report: &ExamReport) -> String {
    let mut out = String::new();
    out.push_str(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>rasgk exam</title>\n<style>\
         body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}\
         h1{font-size:1.3em}h2{font-size:1.1em;margin-top:2em}\
         table{border-collapse:collapse}td,th{padding:2px 8px;vertical-align:top;text-align:left}\
         .pass{color:#176b2c}.fail{color:#b00020;font-weight:bold}.skipped{color:#777}\
         .in td.msg{text-align:left}.out td.msg{text-align:right;color:#0b4f8a}\
         td.at{color:#777;font-variant-numeric:tabular-nums;text-align:right}\
         tr.evidence{background:#fff6d5}code{font-size:12px}\
         </style></head><body>\n",
    );
    let _ = writeln!(
        out,
        "<h1>rasgk exam</h1><p>against {} — drill {}</p>",
        escape(&report.gatekeeper),
        escape(&report.drill)
    );
    for endpoint in &report.endpoints {
        let _ = writeln!(
            out,
            "<h2>{} {}</h2>",
            escape(&endpoint.endpoint),
            escape(endpoint.ras_address.as_deref().unwrap_or(""))
        );
        out.push_str("<table><tr><th>check</th><th>verdict</th><th>what it did</th></tr>\n");
        for check in &endpoint.checks {
            let verdict = check.verdict.name();
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td class=\"{verdict}\">{verdict}</td><td>{}</td></tr>",
                escape(&check.id),
                escape(&check.observed)
            );
        }
        out.push_str("</table>\n");
        let evidence: HashSet<(String, String)> = endpoint
            .checks
            .iter()
            .filter(|c| c.verdict.name() == "fail")
            .flat_map(|c| c.evidence.iter())
            .map(|e| (format!("{:.3}", e.at_s), e.message.clone()))
            .collect();
        out.push_str(
            "<table><tr><th>s</th><th>endpoint → gatekeeper</th><th>gatekeeper → endpoint</th></tr>\n",
        );
        let own = endpoint.ras_address.as_deref().unwrap_or("");
        for message in &endpoint.messages {
            let marked =
                evidence.contains(&(format!("{:.3}", message.at_s), message.message.clone()));
            let line = format!(
                "<code>{}</code><br><small>{} → {}</small>",
                escape(&message.message),
                escape(&message.from),
                escape(&message.to)
            );
            let (left, right, class) = if message.from == own {
                (line, String::new(), "in")
            } else {
                (String::new(), line, "out")
            };
            let _ = writeln!(
                out,
                "<tr class=\"{class}{}\"><td class=\"at\">{:.3}</td><td class=\"msg\">{left}</td><td class=\"msg\">{right}</td></tr>",
                if marked { " evidence" } else { "" },
                message.at_s
            );
        }
        out.push_str("</table>\n");
    }
    out.push_str("</body></html>\n");
    out
}
