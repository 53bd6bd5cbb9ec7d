//! Assembles the layers, top-down in request order.

use tower::{ServiceBuilder, util::BoxCloneSyncService};

use crate::{
    CapOutputLayer, CheckCapabilitiesLayer, ExecConfig, ExecError, Execute, RequireApprovalLayer,
    ResolveLayer, ToolCall, ToolResult, ValidateIdLayer, ValidateInputLayer, ValidateOutputLayer,
};

/// The assembled pipeline: a cloneable `tower::Service<ToolCall>`.
pub type Pipeline = BoxCloneSyncService<ToolCall, ToolResult, ExecError>;

/// Builds the pipeline from `config`.
///
/// Layers run top-down on the request and bottom-up on the response: the output is capped
/// before it is validated, so what is validated is what the caller receives.
pub fn pipeline(config: &ExecConfig) -> Pipeline {
    let stack = ServiceBuilder::new()
        .layer(ValidateIdLayer::new())
        .layer(ResolveLayer::new(config.resolver.clone()))
        .layer(CheckCapabilitiesLayer::new(config.grants.clone()))
        .layer(ValidateInputLayer::new())
        .layer(RequireApprovalLayer::new(config.approver.clone()))
        .layer(ValidateOutputLayer::new())
        .layer(CapOutputLayer::new(config.output_cap_bytes))
        .service(
            Execute::new(config.sandbox.clone(), config.max_limits)
                .with_services(config.services.clone()),
        );
    BoxCloneSyncService::new(stack)
}
