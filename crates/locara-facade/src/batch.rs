//! Batches: the read-only calls of a batch run concurrently, every other call alone and in
//! order.
//!
//! A batch is cut into segments at each call that is not read-only: a run of consecutive
//! read-only calls is one segment, run concurrently; a side-effecting or privileged call is a
//! segment of its own and starts only after everything before it ended, and everything after
//! it waits for it. So a read that follows a write sees the write, and no two side effects
//! overlap. A call whose tier cannot be told (an unknown tool) is treated as not read-only.

use locara_manifest::{SafetyTier, ToolRef};

use crate::{BatchRequest, BatchResponse, BatchResult, Locara, locara::tier_name};

impl Locara {
    /// Runs a batch of calls: consecutive read-only calls concurrently, any other call alone,
    /// in the order given. Every call runs (a failure does not stop the batch); privileged
    /// calls ask the approver, and a denial is that call's `error` (`approval_denied`).
    pub async fn run_batch(&self, batch: BatchRequest) -> BatchResponse {
        let mut results = Vec::with_capacity(batch.calls.len());
        let calls = batch.calls.into_iter().map(|call| {
            let tier = self.safety_tier(&call.tool);
            (call, tier)
        });
        for segment in segments(calls) {
            let runs = segment.into_iter().map(|(request, tier)| async move {
                let tool = request.tool.clone();
                let (response, error) = match self.run(request).await {
                    Ok(response) => (Some(response), None),
                    Err(error) => (None, Some(error.report().clone())),
                };
                BatchResult {
                    tool,
                    safety_tier: tier.map(tier_name),
                    response,
                    error,
                }
            });
            results.extend(futures_util::future::join_all(runs).await);
        }
        BatchResponse {
            ok: results
                .iter()
                .all(|r| r.response.as_ref().is_some_and(|r| r.ok)),
            results,
        }
    }

    /// The safety tier a call of `tool` runs at: the highest among the callable versions it
    /// may name (a bare id may mean any of them, depending on the lockfile), or `None` when no
    /// callable tool matches.
    pub fn safety_tier(&self, tool: &str) -> Option<SafetyTier> {
        let reference: ToolRef = tool.trim().parse().ok()?;
        self.entries(&reference)
            .map(|e| e.manifest.safety_tier)
            .max()
    }
}

/// Cuts `items` (each with the tier it runs at) into segments, in order: a run of consecutive
/// read-only items is one segment, to run concurrently; any other item is a segment of its own.
pub(crate) fn segments<T>(
    items: impl IntoIterator<Item = (T, Option<SafetyTier>)>,
) -> Vec<Vec<(T, Option<SafetyTier>)>> {
    let mut segments: Vec<Vec<(T, Option<SafetyTier>)>> = Vec::new();
    for (item, tier) in items {
        let read_only = tier == Some(SafetyTier::ReadOnly);
        match segments.last_mut() {
            Some(last)
                if read_only && last.iter().all(|(_, t)| *t == Some(SafetyTier::ReadOnly)) =>
            {
                last.push((item, tier));
            }
            _ => segments.push(vec![(item, tier)]),
        }
    }
    segments
}
