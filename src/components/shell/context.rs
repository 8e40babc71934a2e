//! The handshake's `context` map, shaped as Storm's `TopologyContext.toJSONString` sends it to
//! multilang children: every task's component, this task and component, its output streams and
//! their fields and targets, and its input sources with their groupings and fields.

use crate::components::TaskContext;
use crate::topology::model::Grouping;
use crate::topology::plan::{SYSTEM_ID, SYSTEM_TASK};
use serde_json::{json, Map, Value};

/// Storm's `groupingToJSONableMap`: the Thrift union's field name upper-cased as `type`, plus
/// `fields` for fields groupings. Storm models a global grouping as a fields grouping on no
/// fields, and a partial-key grouping as a custom serialized one.
pub fn grouping_json(g: &Grouping) -> Value {
    match g {
        Grouping::Shuffle => json!({ "type": "SHUFFLE" }),
        Grouping::Fields(f) => json!({ "type": "FIELDS", "fields": f }),
        Grouping::Global => json!({ "type": "FIELDS", "fields": [] }),
        Grouping::All => json!({ "type": "ALL" }),
        Grouping::None => json!({ "type": "NONE" }),
        Grouping::Direct => json!({ "type": "DIRECT" }),
        Grouping::LocalOrShuffle => json!({ "type": "LOCAL_OR_SHUFFLE" }),
        Grouping::PartialKey(f) => json!({ "type": "CUSTOM_SERIALIZED", "fields": f }),
    }
}

/// The `context` object of the handshake for the task `ctx` describes.
pub fn context_json(ctx: &TaskContext) -> Value {
    let mut tasks = Map::new();
    // Storm's task->component includes the system task (-1 → __system), the source of ticks.
    tasks.insert("-1".to_string(), Value::from(SYSTEM_ID));
    for (task, component) in ctx.plan.task_to_component() {
        if task != SYSTEM_TASK {
            tasks.insert(task.to_string(), Value::from(component));
        }
    }

    let outputs = ctx.spec().map(|c| c.outputs.clone()).unwrap_or_default();
    let streams: Vec<&String> = outputs.keys().collect();
    let output_fields: Map<String, Value> =
        outputs.iter().map(|(s, f)| (s.clone(), json!(f))).collect();

    let mut targets: Map<String, Value> = Map::new();
    for s in ctx.topology.outputs_of(&ctx.component) {
        let per_stream = targets
            .entry(s.stream.clone())
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(m) = per_stream {
            m.insert(s.to.clone(), grouping_json(&s.grouping));
        }
    }

    let mut source_grouping: Map<String, Value> = Map::new();
    let mut source_fields: Map<String, Value> = Map::new();
    for s in ctx.topology.inputs_of(&ctx.component) {
        if let Value::Object(m) = source_grouping
            .entry(s.from.clone())
            .or_insert_with(|| Value::Object(Map::new()))
        {
            m.insert(s.stream.clone(), grouping_json(&s.grouping));
        }
        let fields = ctx
            .topology
            .component(&s.from)
            .and_then(|c| c.output_fields(&s.stream))
            .map(|f| json!(f))
            .unwrap_or_else(|| json!([]));
        if let Value::Object(m) = source_fields
            .entry(s.from.clone())
            .or_insert_with(|| Value::Object(Map::new()))
        {
            m.insert(s.stream.clone(), fields);
        }
    }

    json!({
        "task->component": tasks,
        "taskid": ctx.task_id,
        "componentid": ctx.component,
        "streams": streams,
        "stream->outputfields": output_fields,
        "stream->target->grouping": targets,
        "source->stream->grouping": source_grouping,
        "source->stream->fields": source_fields,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groupings_use_storm_type_names() {
        assert_eq!(
            grouping_json(&Grouping::Fields(vec!["word".into()])),
            json!({"type": "FIELDS", "fields": ["word"]})
        );
        assert_eq!(
            grouping_json(&Grouping::Global),
            json!({"type": "FIELDS", "fields": []})
        );
        assert_eq!(
            grouping_json(&Grouping::LocalOrShuffle),
            json!({"type": "LOCAL_OR_SHUFFLE"})
        );
    }
}
