//! [`ConfigError`]: what is wrong with a config file, as "file: field: reason".

/// A config file that cannot be run: which file, which field, and why.
///
/// `field` is a key path into the file: `gatekeeper.ttl_s`, `clan[1].region`,
/// `link[0].regions[1]`. Array indices count from 0, in file order, as in TOML arrays. It is
/// empty when the fault has no field (a read error, a TOML syntax error, no C-LAN at all).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{origin}: {}{reason}", field_prefix(.field))]
pub struct ConfigError {
    /// The file name given to [`super::from_toml`] or [`super::load`].
    pub origin: String,
    /// Key path of the faulty value, or empty.
    pub field: String,
    /// What is wrong, for people.
    pub reason: String,
}

impl ConfigError {
    /// A fault of `field` in `origin`.
    pub fn new(
        origin: impl Into<String>,
        field: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        ConfigError {
            origin: origin.into(),
            field: field.into(),
            reason: reason.into(),
        }
    }

    /// The file name.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// Key path of the faulty value, or empty.
    pub fn field(&self) -> &str {
        &self.field
    }

    /// What is wrong.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

/// `"field: "`, or nothing for a fault without a field.
fn field_prefix(field: &str) -> String {
    if field.is_empty() {
        String::new()
    } else {
        format!("{field}: ")
    }
}

/// A fault found while converting the file model, before the file name is attached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fault {
    pub field: String,
    pub reason: String,
}

impl Fault {
    pub fn new(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Fault {
            field: field.into(),
            reason: reason.into(),
        }
    }

    /// The same fault, in file `origin`.
    pub fn in_file(self, origin: &str) -> ConfigError {
        ConfigError::new(origin, self.field, self.reason)
    }
}

#[cfg(test)]
mod tests {
    use super::ConfigError;

    #[test]
    fn display_names_file_field_and_reason() {
        let e = ConfigError::new("rasgk.toml", "clan[2].region", "region 9 is not defined");
        assert_eq!(
            e.to_string(),
            "rasgk.toml: clan[2].region: region 9 is not defined"
        );
        let e = ConfigError::new("rasgk.toml", "", "no [[clan]] is configured");
        assert_eq!(e.to_string(), "rasgk.toml: no [[clan]] is configured");
    }
}
