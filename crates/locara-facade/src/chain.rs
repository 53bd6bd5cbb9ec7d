//! Chains: a small orchestration language over tool calls (docs/chains.md).
//!
//! - Anywhere in a step's arguments, an object of exactly one key, `{"$ref": "steps.N.output.a.b"}`
//!   or `{"$ref": "ID.output.a.b"}` (a step with an `id`), is replaced by that part of an
//!   earlier step's output before the step runs; `…files` is the step's produced files as file
//!   arguments (`{"base64": …}`). Segments after `output` are object keys, or array indices when
//!   they are numbers. Inside a `for_each` step, `{"$ref": "item…"}` (or the step's `as` name)
//!   is the current item.
//! - `when` makes a step conditional (comparisons, `and`/`or`/`not`, `exists`); a skipped step's
//!   output is `null`.
//! - `for_each` runs a step once per item of an array; its output is the array of the items'
//!   outputs. Items of a read-only tool run concurrently, others one after another.
//! - A chain is bounded in calls and wall time; every failure names the step, the JSON pointer
//!   and a hint.

use std::{collections::HashMap, time::Duration};

use locara_exec::depth;
use locara_manifest::SafetyTier;
use serde_json::Value;

use crate::{
    ChainRequest, ChainResponse, ChainStep, Error, ErrorReport, Locara, RunRequest, RunResponse,
    StepTrace, ViolationReport,
};

/// The most calls a chain makes unless it says otherwise.
const DEFAULT_MAX_CALLS: u32 = 64;
/// How long a chain may take unless it says otherwise.
const DEFAULT_WALL_TIME: Duration = Duration::from_secs(600);
/// The name a `for_each` item is bound to unless the step says otherwise.
const DEFAULT_ITEM: &str = "item";

/// Why a `$ref` (or a condition) could not be bound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BindError {
    /// Where the `$ref` is, as a JSON pointer (in the arguments, or under `/when`,
    /// `/for_each`).
    pub(crate) pointer: String,
    /// What is wrong.
    pub(crate) message: String,
}

/// What a `$ref` may name: the steps before the current one, and the current item.
pub(crate) struct Scope<'a> {
    /// Each earlier step's output, by index (`null` for a skipped step).
    pub(crate) outputs: &'a [Value],
    /// Each earlier step's produced files, as file arguments.
    pub(crate) files: &'a [Vec<Value>],
    /// The ids of earlier steps.
    pub(crate) ids: &'a HashMap<String, usize>,
    /// The `for_each` item, and the name it is bound to.
    pub(crate) item: Option<(&'a str, &'a Value)>,
}

/// Replaces every `$ref` in `arguments`, given the outputs of the steps before this one (the
/// `steps.N` form only: the fuzz targets' entry point).
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn bind(arguments: &Value, outputs: &[Value]) -> Result<Value, BindError> {
    let files = vec![Vec::new(); outputs.len()];
    let scope = Scope {
        outputs,
        files: &files,
        ids: &HashMap::new(),
        item: None,
    };
    bind_at(arguments, &scope, &mut String::new())
}

fn push_key(pointer: &mut String, key: &str) {
    pointer.push('/');
    pointer.push_str(&key.replace('~', "~0").replace('/', "~1"));
}

fn bind_at(value: &Value, scope: &Scope<'_>, pointer: &mut String) -> Result<Value, BindError> {
    match value {
        Value::Object(map) if map.len() == 1 && map.contains_key("$ref") => {
            let Value::String(reference) = &map["$ref"] else {
                return Err(BindError {
                    pointer: pointer.clone(),
                    message: "`$ref` must be a string".to_owned(),
                });
            };
            lookup(reference, scope).map_err(|message| BindError {
                pointer: pointer.clone(),
                message,
            })
        }
        Value::Object(map) => {
            let mut out = serde_json::Map::new();
            for (key, item) in map {
                let len = pointer.len();
                push_key(pointer, key);
                out.insert(key.clone(), bind_at(item, scope, pointer)?);
                pointer.truncate(len);
            }
            Ok(Value::Object(out))
        }
        Value::Array(items) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                let len = pointer.len();
                push_key(pointer, &i.to_string());
                out.push(bind_at(item, scope, pointer)?);
                pointer.truncate(len);
            }
            Ok(Value::Array(out))
        }
        other => Ok(other.clone()),
    }
}

fn lookup(reference: &str, scope: &Scope<'_>) -> Result<Value, String> {
    let mut segments = reference.split('.');
    let first = segments.next().unwrap_or_default();
    let owned;
    let (mut current, mut walked) = match scope.item {
        Some((name, item)) if name == first => (item, first.to_owned()),
        _ => {
            let (index, label) = if first == "steps" {
                let Some(index) = segments.next() else {
                    return Err(form(reference));
                };
                let index: usize = index
                    .parse()
                    .map_err(|_| format!("`{index}` in `{reference}` is not a step number"))?;
                (index, format!("steps.{index}"))
            } else if let Some(&index) = scope.ids.get(first) {
                (index, first.to_owned())
            } else {
                let mut known: Vec<String> = scope.ids.keys().map(|id| format!("`{id}`")).collect();
                known.sort();
                if let Some((name, _)) = scope.item {
                    known.push(format!("the item `{name}`"));
                }
                let known = if known.is_empty() {
                    String::new()
                } else {
                    format!(" (earlier steps and items: {})", known.join(", "))
                };
                return Err(format!(
                    "`{reference}` names no earlier step{known}: refer to one as `steps.N.output…` or `ID.output…`, or to a for_each item by its name"
                ));
            };
            if index >= scope.outputs.len() {
                return Err(match scope.outputs.len() {
                    0 => format!("`{reference}` names step {index}, but this is the first step"),
                    n => format!(
                        "`{reference}` names step {index}, but only steps 0 to {} ran before this one",
                        n - 1
                    ),
                });
            }
            match segments.next() {
                Some("output") => (&scope.outputs[index], format!("{label}.output")),
                Some("files") => {
                    owned = Value::Array(scope.files[index].clone());
                    (&owned, format!("{label}.files"))
                }
                _ => return Err(form(reference)),
            }
        }
    };
    for segment in segments {
        let next = match current {
            Value::Object(map) => map.get(segment),
            Value::Array(items) => segment.parse::<usize>().ok().and_then(|i| items.get(i)),
            _ => None,
        };
        current = next.ok_or_else(|| {
            let available = match current {
                Value::Object(map) if map.is_empty() => "it is an empty object".to_owned(),
                Value::Object(map) => format!(
                    "its fields are: {}",
                    map.keys().cloned().collect::<Vec<_>>().join(", ")
                ),
                Value::Array(items) => format!("it is an array of {} items", items.len()),
                other => format!("it is {}", kind(other)),
            };
            format!("`{walked}` has no `{segment}`; {available}")
        })?;
        walked.push('.');
        walked.push_str(segment);
    }
    Ok(current.clone())
}

/// The forms a reference may take, for messages.
fn form(reference: &str) -> String {
    format!(
        "`{reference}` is not of the form `steps.N.output[.field…]` (or `ID.output…`, `ID.files…`, `item…`)"
    )
}

/// What kind of JSON value `value` is, with its article, for messages.
pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Whether a bound value counts as true: anything but `null`, `false`, `0`, `""`, `[]`, `{}`.
fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64() != Some(0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(items) => !items.is_empty(),
        Value::Object(map) => !map.is_empty(),
    }
}

/// Evaluates a `when` condition.
pub(crate) fn condition(
    expression: &Value,
    scope: &Scope<'_>,
    pointer: &mut String,
) -> Result<bool, BindError> {
    let error = |pointer: &String, message: String| BindError {
        pointer: pointer.clone(),
        message,
    };
    let shape = "a condition is `true`, `false`, `{\"$ref\": …}`, `{\"exists\": REF}`, `{\"eq\"|\"ne\"|\"lt\"|\"le\"|\"gt\"|\"ge\": [A, B]}`, `{\"and\": [...]}`, `{\"or\": [...]}` or `{\"not\": C}`";
    let Value::Object(map) = expression else {
        return match expression {
            Value::Bool(b) => Ok(*b),
            other => Err(error(
                pointer,
                format!("{} is not a condition; {shape}", kind(other)),
            )),
        };
    };
    let mut entries = map.iter();
    let (Some((op, operand)), None) = (entries.next(), entries.next()) else {
        return Err(error(
            pointer,
            format!(
                "an object of {} keys is not a condition; {shape}",
                map.len()
            ),
        ));
    };
    let len = pointer.len();
    push_key(pointer, op);
    let result = match op.as_str() {
        "$ref" => bind_at(expression, scope, &mut pointer[..len].to_owned()).map(|v| truthy(&v)),
        "exists" => {
            let reference = match operand {
                Value::String(reference) => Some(reference.as_str()),
                Value::Object(inner) if inner.len() == 1 => inner["$ref"].as_str(),
                _ => None,
            };
            let reference = reference.ok_or_else(|| {
                error(
                    pointer,
                    "`exists` takes a reference: a string or {\"$ref\": …}".to_owned(),
                )
            })?;
            Ok(lookup(reference, scope).is_ok_and(|v| !v.is_null()))
        }
        "not" => condition(operand, scope, pointer).map(|b| !b),
        "and" | "or" => {
            let Value::Array(items) = operand else {
                return Err(error(
                    pointer,
                    format!("`{op}` takes an array of conditions"),
                ));
            };
            let mut result = op == "and";
            for (i, item) in items.iter().enumerate() {
                let len = pointer.len();
                push_key(pointer, &i.to_string());
                let value = condition(item, scope, pointer)?;
                pointer.truncate(len);
                if op == "and" && !value {
                    result = false;
                    break;
                }
                if op == "or" && value {
                    result = true;
                    break;
                }
            }
            Ok(result)
        }
        "eq" | "ne" | "lt" | "le" | "gt" | "ge" => {
            let sides = match operand {
                Value::Array(sides) if sides.len() == 2 => sides,
                _ => {
                    return Err(error(
                        pointer,
                        format!(
                            "`{op}` takes an array of two values, e.g. [{{\"$ref\": \"steps.0.output.count\"}}, 3]"
                        ),
                    ));
                }
            };
            let a = bind_at(&sides[0], scope, &mut format!("{pointer}/0"))?;
            let b = bind_at(&sides[1], scope, &mut format!("{pointer}/1"))?;
            compare(op, &a, &b).map_err(|m| error(pointer, m))
        }
        other => Err(error(
            pointer,
            format!("unknown operator `{other}`; {shape}"),
        )),
    };
    pointer.truncate(len);
    result
}

fn compare(op: &str, a: &Value, b: &Value) -> Result<bool, String> {
    use std::cmp::Ordering;
    let equal = match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    };
    let order = || -> Result<Ordering, String> {
        match (a, b) {
            (Value::Number(x), Value::Number(y)) => x
                .as_f64()
                .zip(y.as_f64())
                .and_then(|(x, y)| x.partial_cmp(&y))
                .ok_or_else(|| "the numbers cannot be compared".to_owned()),
            (Value::String(x), Value::String(y)) => Ok(x.cmp(y)),
            _ => Err(format!(
                "`{op}` compares two numbers or two strings, not {} and {}",
                kind(a),
                kind(b)
            )),
        }
    };
    Ok(match op {
        "eq" => equal,
        "ne" => !equal,
        "lt" => order()? == Ordering::Less,
        "le" => order()? != Ordering::Greater,
        "gt" => order()? == Ordering::Greater,
        _ => order()? != Ordering::Less,
    })
}

/// The progress of a chain.
#[derive(Default)]
struct Run {
    calls: Vec<RunResponse>,
    trace: Vec<StepTrace>,
    outputs: Vec<Value>,
    files: Vec<Vec<Value>>,
    ids: HashMap<String, usize>,
}

impl Run {
    fn fail(self, step: usize, error: Option<ErrorReport>) -> ChainResponse {
        ChainResponse {
            ok: false,
            steps: self.calls,
            failed_step: Some(step),
            error,
            trace: self.trace,
        }
    }
}

/// An error report naming the step (index and id), with the violation at `pointer`.
fn step_error(
    code: &str,
    index: usize,
    step: &ChainStep,
    error: BindError,
    constraint: &str,
    hint: &str,
) -> ErrorReport {
    let pointer = if error.pointer.is_empty() {
        "/".to_owned()
    } else {
        error.pointer.clone()
    };
    let name = step
        .id
        .as_ref()
        .map_or_else(String::new, |id| format!(" `{id}`"));
    let what = match constraint {
        "$ref" => format!("cannot bind the `$ref` at {pointer}"),
        _ => format!("its `{constraint}` at {pointer} cannot be evaluated"),
    };
    let mut report = Error::new(
        code,
        format!(
            "step {index}{name} ({}): {what}: {}",
            step.tool, error.message
        ),
        hint,
    )
    .report()
    .clone();
    report.violations = vec![ViolationReport {
        pointer: error.pointer,
        constraint: constraint.to_owned(),
        message: error.message,
    }];
    report
}

const BINDING_HINT: &str = "refer to an earlier step's output as {\"$ref\": \"steps.N.output.field\"} or {\"$ref\": \"ID.output.field\"}, to its files as {\"$ref\": \"ID.files.0\"}, and to a for_each item as {\"$ref\": \"item.field\"}";

/// Checks the steps' ids: well formed, unique, and not a name a reference means otherwise.
fn check_ids(steps: &[ChainStep]) -> Result<(), Box<(usize, ErrorReport)>> {
    let mut seen: HashMap<&str, usize> = HashMap::new();
    let items: Vec<&str> = steps
        .iter()
        .map(|s| s.item_name.as_deref().unwrap_or(DEFAULT_ITEM))
        .collect();
    for (index, step) in steps.iter().enumerate() {
        let name = step.item_name.as_deref().unwrap_or(DEFAULT_ITEM);
        let well_formed = |n: &str| {
            n.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
                && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        };
        let bad = |message: String, pointer: &str| {
            let mut report = Error::new(
                "invalid_chain",
                format!("step {index} ({}): {message}", step.tool),
                "name steps with letters, digits and `_` (starting with a letter), each name once, never `steps` nor a for_each item's name",
            )
            .report()
            .clone();
            report.violations = vec![ViolationReport {
                pointer: pointer.to_owned(),
                constraint: "id".to_owned(),
                message,
            }];
            Box::new((index, report))
        };
        if !well_formed(name) || name == "steps" {
            return Err(bad(
                format!("`as` is `{name}`, which cannot name an item"),
                "/as",
            ));
        }
        let Some(id) = step.id.as_deref() else {
            continue;
        };
        if !well_formed(id) || id == "steps" {
            return Err(bad(
                format!("the id `{id}` is not a name a reference can use"),
                "/id",
            ));
        }
        if let Some(first) = seen.insert(id, index) {
            return Err(bad(
                format!("the id `{id}` is already step {first}'s"),
                "/id",
            ));
        }
        if items.contains(&id) {
            return Err(bad(
                format!("the id `{id}` is also the name of a for_each item"),
                "/id",
            ));
        }
    }
    Ok(())
}

impl Locara {
    /// Runs a chain (see [`ChainRequest`]): each step in order, its `$ref`s bound to earlier
    /// results, only `when` its condition holds, once per `for_each` item. Stops at the first
    /// step that fails or cannot run, or at a chain limit.
    pub async fn run_chain(&self, chain: ChainRequest) -> ChainResponse {
        // Binding recurses into the arguments: refuse, before anything else, nesting so deep
        // that it would overflow the stack (see `locara_exec::depth`).
        let too_deep = chain.steps.iter().enumerate().find_map(|(index, step)| {
            [
                Some(&step.arguments),
                step.when.as_ref(),
                step.for_each.as_ref(),
            ]
            .into_iter()
            .flatten()
            .find_map(|value| depth::refuse_too_deep(&step.tool, value))
            .map(|error| (index, error))
        });
        if let Some((index, error)) = too_deep {
            for step in chain.steps {
                depth::drop_deep(step.arguments);
                step.when.into_iter().for_each(depth::drop_deep);
                step.for_each.into_iter().for_each(depth::drop_deep);
            }
            return Run::default().fail(index, Some(Error::from(error).report().clone()));
        }
        if let Err(refused) = check_ids(&chain.steps) {
            let (index, report) = *refused;
            return Run::default().fail(index, Some(report));
        }
        let max_calls = chain.max_calls.unwrap_or(DEFAULT_MAX_CALLS) as usize;
        let wall_time = chain
            .wall_time_ms
            .map_or(DEFAULT_WALL_TIME, Duration::from_millis);
        let deadline = tokio::time::Instant::now() + wall_time;
        let mut run = Run::default();
        for (index, step) in chain.steps.iter().enumerate() {
            let item_name = step.item_name.as_deref().unwrap_or(DEFAULT_ITEM);
            let scope = Scope {
                outputs: &run.outputs,
                files: &run.files,
                ids: &run.ids,
                item: None,
            };
            let mut trace = StepTrace {
                step: index,
                id: step.id.clone(),
                skipped: false,
                calls: Vec::new(),
            };
            if let Some(when) = &step.when {
                match condition(when, &scope, &mut "/when".to_owned()) {
                    Ok(true) => {}
                    Ok(false) => {
                        trace.skipped = true;
                        run.trace.push(trace);
                        run.outputs.push(Value::Null);
                        run.files.push(Vec::new());
                        if let Some(id) = &step.id {
                            run.ids.insert(id.clone(), index);
                        }
                        continue;
                    }
                    Err(error) => {
                        let report = step_error(
                            "invalid_condition",
                            index,
                            step,
                            error,
                            "when",
                            "write the condition with eq, ne, lt, le, gt, ge, exists, and, or, not over values and {\"$ref\": …}",
                        );
                        return run.fail(index, Some(report));
                    }
                }
            }
            // The step's calls: one, or one per item.
            let items = match &step.for_each {
                None => None,
                Some(items) => {
                    let bound = bind_at(items, &scope, &mut "/for_each".to_owned());
                    match bound {
                        Ok(Value::Array(items)) => Some(items),
                        Ok(other) => {
                            let error = BindError {
                                pointer: "/for_each".to_owned(),
                                message: format!(
                                    "`for_each` must be an array, not {}",
                                    kind(&other)
                                ),
                            };
                            let report = step_error(
                                "invalid_binding",
                                index,
                                step,
                                error,
                                "for_each",
                                BINDING_HINT,
                            );
                            return run.fail(index, Some(report));
                        }
                        Err(error) => {
                            let report = step_error(
                                "invalid_binding",
                                index,
                                step,
                                error,
                                "$ref",
                                BINDING_HINT,
                            );
                            return run.fail(index, Some(report));
                        }
                    }
                }
            };
            let mut requests = Vec::new();
            for item in items
                .as_deref()
                .map_or(vec![None], |items| items.iter().map(Some).collect())
            {
                let scope = Scope {
                    item: item.map(|item| (item_name, item)),
                    ..scope
                };
                match bind_at(&step.arguments, &scope, &mut String::new()) {
                    Ok(arguments) => {
                        let mut request = RunRequest::new(step.tool.clone(), arguments);
                        request.workspace = step.workspace.clone();
                        request.receipt = step.receipt;
                        requests.push(request);
                    }
                    Err(error) => {
                        let report =
                            step_error("invalid_binding", index, step, error, "$ref", BINDING_HINT);
                        return run.fail(index, Some(report));
                    }
                }
            }
            if run.calls.len() + requests.len() > max_calls {
                let mut report = Error::new(
                    "limit_exceeded",
                    format!(
                        "step {index} ({}) would take the chain to {} calls, above its max_calls of {max_calls}",
                        step.tool,
                        run.calls.len() + requests.len()
                    ),
                    "raise the chain's max_calls, or iterate over fewer items",
                )
                .report()
                .clone();
                report.limit = Some("chain_calls".to_owned());
                return run.fail(index, Some(report));
            }
            // A read-only tool's items run concurrently; any other call alone, in order, and
            // a failed item stops the rest.
            let concurrent =
                items.is_some() && self.safety_tier(&step.tool) == Some(SafetyTier::ReadOnly);
            let calls = async {
                if concurrent {
                    futures_util::future::join_all(requests.into_iter().map(|r| self.run(r))).await
                } else {
                    let mut results = Vec::new();
                    for request in requests {
                        let result = self.run(request).await;
                        let stop = !result.as_ref().is_ok_and(|r| r.ok);
                        results.push(result);
                        if stop {
                            break;
                        }
                    }
                    results
                }
            };
            let Ok(results) = tokio::time::timeout_at(deadline, calls).await else {
                let mut report = Error::new(
                    "limit_exceeded",
                    format!(
                        "the chain ran out of its wall time ({} ms) in step {index} ({}), whose calls were cancelled",
                        wall_time.as_millis(),
                        step.tool
                    ),
                    "raise the chain's wall_time_ms, or split the work into smaller chains",
                )
                .report()
                .clone();
                report.limit = Some("chain_wall_time".to_owned());
                run.trace.push(trace);
                return run.fail(index, Some(report));
            };
            let mut outputs = Vec::new();
            let mut files = Vec::new();
            let mut failure = None;
            for (i, result) in results.into_iter().enumerate() {
                match result {
                    Ok(response) => {
                        if !response.ok && failure.is_none() {
                            failure = Some(None);
                        }
                        outputs.push(response.output.clone().unwrap_or(Value::Null));
                        files.extend(response.files.iter().filter_map(|f| {
                            f.base64
                                .as_ref()
                                .map(|b| serde_json::json!({ "base64": b }))
                        }));
                        trace.calls.push(run.calls.len());
                        run.calls.push(response);
                    }
                    Err(error) if failure.is_none() => {
                        let mut report = error.report().clone();
                        if items.is_some() {
                            report.message = format!("item {i}: {}", report.message);
                        }
                        failure = Some(Some(report));
                    }
                    Err(_) => {}
                }
            }
            run.trace.push(trace);
            if let Some(error) = failure {
                return run.fail(index, error);
            }
            run.outputs.push(match items {
                Some(_) => Value::Array(outputs),
                None => outputs.pop().unwrap_or(Value::Null),
            });
            run.files.push(files);
            if let Some(id) = &step.id {
                run.ids.insert(id.clone(), index);
            }
        }
        ChainResponse {
            ok: true,
            steps: run.calls,
            failed_step: None,
            error: None,
            trace: run.trace,
        }
    }
}
