//! The facade's error: could-not-run, in a form an agent can act on.

use crate::{ErrorReport, types::ViolationReport};

/// Why a request could not be served.
///
/// It carries the same [`ErrorReport`] an agent receives as JSON ([`Error::report`]).
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}", report.message)]
pub struct Error {
    report: Box<ErrorReport>,
}

impl Error {
    pub(crate) fn new(code: &str, message: impl Into<String>, hint: impl Into<String>) -> Error {
        Error {
            report: Box::new(ErrorReport {
                code: code.to_owned(),
                message: message.into(),
                hint: hint.into(),
                violations: Vec::new(),
                limit: None,
                exit_code: None,
            }),
        }
    }

    /// The error as an agent sees it.
    pub fn report(&self) -> &ErrorReport {
        &self.report
    }

    /// The stable snake_case code, e.g. `invalid_input`.
    pub fn code(&self) -> &str {
        &self.report.code
    }

    /// What to do next.
    pub fn hint(&self) -> &str {
        &self.report.hint
    }
}

impl From<locara_exec::ExecError> for Error {
    fn from(error: locara_exec::ExecError) -> Error {
        let mut out = Error::new(error.code(), error.to_string(), error.hint());
        if let locara_exec::ExecError::InvalidInput { violations, .. } = &error {
            out.report.violations = violations.iter().map(ViolationReport::from).collect();
        }
        out
    }
}

impl From<locara_registry::Error> for Error {
    fn from(error: locara_registry::Error) -> Error {
        locara_exec::ExecError::from(error).into()
    }
}

impl From<&locara_exec::SchemaViolation> for ViolationReport {
    fn from(v: &locara_exec::SchemaViolation) -> ViolationReport {
        ViolationReport {
            pointer: v.pointer.clone(),
            constraint: v.constraint.clone(),
            message: v.message.clone(),
        }
    }
}
