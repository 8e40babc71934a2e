//! Printing a coordination tree: one node per line with its full path and, when it
//! has data, ` = ` and the data as compact JSON; or the same tree as one nested JSON document.
//! Works over any `CoordinationStore`, so a live cluster's tree prints the same way.

use crate::cluster::coordination::znode_store::{child_path, CoordinationStore, StoreError};
use serde_json::{Map, Value};
use std::cmp::Ordering;

/// Sibling order in a dump: names that are numbers (task ids) by value and first, then the
/// others by name. So `/tasks/ID/2` comes before `/tasks/ID/10`.
fn child_order(a: &str, b: &str) -> Ordering {
    match (a.parse::<u64>(), b.parse::<u64>()) {
        (Ok(x), Ok(y)) => x.cmp(&y).then_with(|| a.cmp(b)),
        (Ok(_), Err(_)) => Ordering::Less,
        (Err(_), Ok(_)) => Ordering::Greater,
        (Err(_), Err(_)) => a.cmp(b),
    }
}

fn sorted_children(store: &dyn CoordinationStore, path: &str) -> Result<Vec<String>, StoreError> {
    let mut kids = store.children(path, None)?;
    kids.sort_by(|a, b| child_order(a, b));
    Ok(kids)
}

/// A node's data as JSON: `None` when empty; text that is not JSON becomes a JSON string.
fn data_value(data: &[u8]) -> Option<Value> {
    if data.is_empty() {
        return None;
    }
    Some(
        serde_json::from_slice(data)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(data).into_owned())),
    )
}

/// Every node under (and including) `root`, parents first, with its data.
fn walk(
    store: &dyn CoordinationStore,
    root: &str,
) -> Result<Vec<(String, Option<Value>)>, StoreError> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_string()];
    while let Some(path) = stack.pop() {
        let (data, _) = store.get_data(&path, None)?;
        for k in sorted_children(store, &path)?.iter().rev() {
            stack.push(child_path(&path, k));
        }
        out.push((path, data_value(&data)));
    }
    Ok(out)
}

/// The text dump: one line per node, each ending in a newline.
pub(crate) fn to_text(store: &dyn CoordinationStore, root: &str) -> Result<String, StoreError> {
    let mut out = String::new();
    for (path, data) in walk(store, root)? {
        out.push_str(&path);
        if let Some(v) = data {
            out.push_str(" = ");
            out.push_str(&v.to_string());
        }
        out.push('\n');
    }
    Ok(out)
}

/// The JSON dump: the root node as an object with its `path`; every node has `data` when it
/// has data and `children` (by name) when it has children.
pub(crate) fn to_json(store: &dyn CoordinationStore, root: &str) -> Result<Value, StoreError> {
    let mut doc = Map::new();
    doc.insert("path".into(), Value::String(root.to_string()));
    if let Value::Object(node) = node_json(store, root)? {
        doc.extend(node);
    }
    Ok(Value::Object(doc))
}

fn node_json(store: &dyn CoordinationStore, path: &str) -> Result<Value, StoreError> {
    let (data, _) = store.get_data(path, None)?;
    let mut node = Map::new();
    if let Some(v) = data_value(&data) {
        node.insert("data".into(), v);
    }
    let kids = sorted_children(store, path)?;
    if !kids.is_empty() {
        let mut children = Map::new();
        for k in kids {
            let child = node_json(store, &child_path(path, &k))?;
            children.insert(k, child);
        }
        node.insert("children".into(), Value::Object(children));
    }
    Ok(Value::Object(node))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::coordination::tree::SharedTree;
    use crate::cluster::coordination::znode_store::CreateMode;

    fn sample() -> SharedTree {
        let t = SharedTree::new();
        t.create_all("/storm/tasks/t-1-5").ok();
        for task in [10, 2, 1] {
            let path = format!("/storm/tasks/t-1-5/{task}");
            t.create(&path, br#"{"component":"c"}"#, CreateMode::Persistent)
                .ok();
        }
        t.create("/storm/note", b"plain text", CreateMode::Persistent)
            .ok();
        t
    }

    #[test]
    fn text_dump_orders_task_ids_numerically_and_quotes_non_json() {
        let text = to_text(&sample(), "/storm").unwrap_or_else(|e| e.to_string());
        assert_eq!(
            text,
            "/storm\n/storm/note = \"plain text\"\n/storm/tasks\n/storm/tasks/t-1-5\n\
             /storm/tasks/t-1-5/1 = {\"component\":\"c\"}\n\
             /storm/tasks/t-1-5/2 = {\"component\":\"c\"}\n\
             /storm/tasks/t-1-5/10 = {\"component\":\"c\"}\n"
        );
    }

    #[test]
    fn json_dump_nests_children_by_name() {
        let doc = to_json(&sample(), "/storm").unwrap_or_default();
        assert_eq!(doc["path"], "/storm");
        assert_eq!(doc["children"]["note"]["data"], "plain text");
        let tasks = &doc["children"]["tasks"]["children"]["t-1-5"]["children"];
        let names: Vec<&String> = tasks
            .as_object()
            .map(|m| m.keys().collect())
            .unwrap_or_default();
        assert_eq!(names, ["1", "2", "10"]);
        assert_eq!(tasks["10"]["data"]["component"], "c");
        assert!(doc["children"]["tasks"].get("data").is_none());
    }

    #[test]
    fn dumping_a_missing_root_is_an_error() {
        let err = to_text(&SharedTree::new(), "/nothing");
        assert_eq!(err, Err(StoreError::NoNode("/nothing".into())));
    }
}
