//! The pipeline's schema checks, for the fuzz targets in `fuzz/` (the `fuzzing` feature).
//!
//! Not a stable API: it is here so that the fuzzers exercise the very code the
//! `ValidateInput` and `ValidateOutput` layers run, which needs a `VerifiedArtifact` otherwise.

use serde_json::Value;

use crate::{ExecError, SchemaViolation, schema};

/// A schema compiled as the pipeline compiles a manifest's `input_schema` or `output_schema`.
#[derive(Debug)]
pub struct Schema(jsonschema::Validator);

impl Schema {
    /// Compiles `schema`; a `$ref` to a remote URL fails instead of fetching anything.
    ///
    /// # Errors
    ///
    /// Returns [`ExecError::InvalidSchema`], naming `tool` and `which`, if `schema` is not a
    /// valid JSON Schema.
    pub fn compile(tool: &str, which: &'static str, schema: &Value) -> Result<Schema, ExecError> {
        schema::compile(tool, which, schema).map(Schema)
    }

    /// Every way `value` breaks the schema, as the pipeline reports it (at most 8).
    pub fn violations(&self, value: &Value) -> Vec<SchemaViolation> {
        schema::violations(&self.0, value)
    }

    /// What `ValidateInput` decides for `arguments`.
    ///
    /// # Errors
    ///
    /// Returns [`ExecError::InvalidInput`], naming `tool`, with every violation found.
    pub fn check_input(&self, tool: &str, arguments: &Value) -> Result<(), ExecError> {
        schema::check_input(&tool, &self.0, arguments)
    }
}
