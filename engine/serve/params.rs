//! The params of each JSON-RPC method, checked strictly: an unknown field, a missing one or a
//! value of the wrong type is an invalid-params error (-32602) naming the field, and the
//! method does nothing. (A misspelled `batch_id` once meant "cancel every batch".)

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::executor::Batch;
use crate::model::ModeName;
use crate::model::batch::{BatchCall, BatchFile, MAX_CALLS};

/// Params of a method that takes none (`initialize`, `shutdown`): only `{}` is accepted.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoParams {}

/// `executeBatch` and `plan`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchParams {
    batch: RpcBatch,
}

/// A batch as the protocol carries it: a batch file plus an optional id.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RpcBatch {
    #[serde(default)]
    id: Option<String>,
    #[serde(default, rename = "$schema")]
    schema: Option<String>,
    #[serde(default)]
    modes: Vec<String>,
    calls: Vec<BatchCall>,
}

/// The client's answer to a `permission/request` (its `result`), read as strictly as params:
/// an answer that cannot be read is a denial, never an approval.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalResult {
    /// `allow` or `deny`.
    pub decision: ApprovalDecision,
    /// Why (shown in the call's reasons).
    #[serde(default)]
    pub reason: Option<String>,
    /// A denial's comment for the model.
    #[serde(default)]
    pub feedback: Option<String>,
}

/// The decision of an [`ApprovalResult`].
#[derive(Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalDecision {
    Allow,
    Deny,
}

impl BatchParams {
    /// The batch and its modes; a batch without calls is refused.
    pub fn into_batch(self) -> Result<(Batch, Vec<ModeName>), String> {
        let RpcBatch {
            id,
            schema,
            modes,
            calls,
        } = self.batch;
        if calls.is_empty() {
            return Err("invalid params: `batch.calls` is empty: the batch has no calls".into());
        }
        if calls.len() > MAX_CALLS {
            return Err(format!(
                "invalid params: `batch.calls` has {} calls, more than the {MAX_CALLS} a batch may hold: send them as several batches",
                calls.len()
            ));
        }
        let (mut batch, modes) = Batch::from_file(BatchFile {
            schema,
            modes,
            calls,
        });
        batch.id = id.map(crate::model::BatchId::new);
        Ok((batch, modes))
    }
}

/// `cancel`: one batch by id, or every running batch with the explicit `all: true`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CancelParams {
    #[serde(default)]
    batch_id: Option<String>,
    #[serde(default)]
    all: Option<bool>,
}

/// What `cancel` cancels.
#[derive(Debug, PartialEq, Eq)]
pub enum CancelTarget {
    /// The batch with this id (if it runs).
    One(String),
    /// Every running batch.
    All,
}

impl CancelParams {
    /// The target; exactly one of `batch_id` and `all: true` must be given.
    pub fn target(self) -> Result<CancelTarget, String> {
        match (self.batch_id, self.all) {
            (Some(id), None | Some(false)) => Ok(CancelTarget::One(id)),
            (None, Some(true)) => Ok(CancelTarget::All),
            (Some(_), Some(true)) => {
                Err("invalid params: give either `batch_id` or `all: true`, not both".into())
            }
            (None, None | Some(false)) => Err(
                "invalid params: `cancel` needs `batch_id` (one batch) or `all: true` (every running batch)"
                    .into(),
            ),
        }
    }
}

/// `explain`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExplainParams {
    /// The tool (name or alias).
    pub tool: String,
}

/// Parses `params` as `T`; the error names the field at fault.
pub fn parse<T: DeserializeOwned>(params: &Value) -> Result<T, String> {
    crate::load::json::deserialize_as(params, "invalid params")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn cancel_needs_an_explicit_target() {
        let target = |v: Value| parse::<CancelParams>(&v).and_then(CancelParams::target);
        assert_eq!(
            target(json!({"batch_id": "b"})),
            Ok(CancelTarget::One("b".into()))
        );
        assert_eq!(target(json!({"all": true})), Ok(CancelTarget::All));
        for bad in [
            json!({}),
            json!({"all": false}),
            json!({"batch_id": 12345}),
            json!({"batchId": "b"}),
            json!({"batch_id": "b", "all": true}),
            json!({"all": "yes"}),
        ] {
            assert!(target(bad.clone()).is_err(), "{bad} was accepted");
        }
        let wrong_type = target(json!({"batch_id": 12345})).unwrap_err();
        assert!(wrong_type.contains("`batch_id`"), "{wrong_type}");
        let misspelled = target(json!({"batchId": "b"})).unwrap_err();
        assert!(misspelled.contains("`batchId`"), "{misspelled}");
    }

    #[test]
    fn batch_params_are_checked() {
        let batch = |v: Value| parse::<BatchParams>(&v).and_then(BatchParams::into_batch);
        assert!(batch(json!({})).is_err());
        assert!(batch(json!({"batch": {"calls": []}})).is_err());
        let call = json!({"id": "c", "tool": "Read", "input": {}});
        let calls: Vec<Value> = (0..=MAX_CALLS)
            .map(|i| json!({"id": format!("c{i}"), "tool": "Read", "input": {}}))
            .collect();
        let many = batch(json!({"batch": {"calls": calls}})).unwrap_err();
        assert!(many.contains("more than the 10000"), "{many}");
        assert!(batch(json!({"batch": {"calls": [call]}})).is_ok());
        assert!(batch(json!({"batch": {"calls": [{"id": 1, "tool": "Read"}]}})).is_err());
        let unknown = batch(json!({"batch": {"calls": [], "mode": []}})).unwrap_err();
        assert!(unknown.contains("`mode`"), "{unknown}");
        let id = batch(json!({"batch": {"id": 7, "calls": []}})).unwrap_err();
        assert!(id.contains("`batch.id`"), "{id}");
        let (batch, modes) = batch(json!({"batch": {"id": "b1", "modes": ["plan"], "calls": [{"id": "c", "tool": "Read", "input": {}}]}})).unwrap();
        assert_eq!(batch.id.unwrap().as_str(), "b1");
        assert_eq!(modes[0].as_str(), "plan");
    }
}
