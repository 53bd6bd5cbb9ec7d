//! Compiles manifest schemas once and turns validation errors into [`SchemaViolation`]s.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use jsonschema::Validator;
use locara_registry::Digest;
use serde_json::Value;

use crate::{ExecError, ResolvedTool, SchemaViolation};

/// At most this many violations are reported for one value.
const MAX_VIOLATIONS: usize = 8;

/// A manifest's digest and which of its schemas (`input_schema` or `output_schema`).
type SchemaKey = (Digest, &'static str);

/// Compiled schemas, keyed by the manifest's digest and which schema it is.
#[derive(Debug, Clone, Default)]
pub(crate) struct SchemaCache {
    compiled: Arc<Mutex<HashMap<SchemaKey, Arc<Validator>>>>,
}

impl SchemaCache {
    /// The compiled `which` schema (`input_schema` or `output_schema`) of a verified tool's
    /// manifest, compiled on first use.
    pub(crate) fn get(
        &self,
        tool: &ResolvedTool,
        which: &'static str,
    ) -> Result<Arc<Validator>, ExecError> {
        let key = (*tool.manifest_digest(), which);
        if let Some(validator) = self
            .compiled
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
        {
            return Ok(Arc::clone(validator));
        }
        let manifest = tool.manifest();
        let schema = if which == "input_schema" {
            &manifest.input_schema
        } else {
            &manifest.output_schema
        };
        let validator = Arc::new(compile(&manifest.tool_ref().to_string(), which, schema)?);
        self.compiled
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, Arc::clone(&validator));
        Ok(validator)
    }
}

/// Compiles the `which` schema of `tool`.
pub(crate) fn compile(
    tool: &str,
    which: &'static str,
    schema: &Value,
) -> Result<Validator, ExecError> {
    // Default features are off: a schema that `$ref`s a remote URL fails to compile instead of
    // fetching anything.
    jsonschema::validator_for(schema).map_err(|e| ExecError::InvalidSchema {
        tool: tool.to_owned(),
        which,
        message: e.to_string(),
    })
}

/// What `ValidateInput` decides for `arguments` of `tool`: `Ok`, or
/// [`ExecError::InvalidInput`] with every violation found.
pub(crate) fn check_input(
    tool: &dyn std::fmt::Display,
    validator: &Validator,
    arguments: &Value,
) -> Result<(), ExecError> {
    let violations = violations(validator, arguments);
    if violations.is_empty() {
        Ok(())
    } else {
        Err(ExecError::InvalidInput {
            tool: tool.to_string(),
            violations,
        })
    }
}

/// Every way `value` breaks `validator`'s schema (at most [`MAX_VIOLATIONS`]).
///
/// A value is first checked with `is_valid`, which stops at the first violation and allocates
/// nothing, so a valid one (nearly every call's) costs no error lists; only an invalid one is
/// walked again for its errors.
pub(crate) fn violations(validator: &Validator, value: &Value) -> Vec<SchemaViolation> {
    if validator.is_valid(value) {
        return Vec::new();
    }
    validator
        .iter_errors(value)
        .take(MAX_VIOLATIONS)
        .map(|error| SchemaViolation {
            pointer: error.instance_path().to_string(),
            constraint: format!("{} at {}", error.kind().keyword(), error.schema_path()),
            message: error.to_string(),
        })
        .collect()
}
