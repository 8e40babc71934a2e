//! Rebalancing a topology read from the DSL: what a rebalance keeps and what it refuses.

use crate::model::plan::Plan;
use crate::model::rebalance::Rebalance;
use crate::model::Topology;

fn word_count() -> Topology {
    let text = "stdin | split x4 | count(word) x2 | stdout";
    super::load_inline(text, &Default::default())
        .expect("a word count")
        .topology
}

fn ids(t: &Topology) -> (String, String) {
    let split = t.components[1].id.clone();
    let count = t.components[2].id.clone();
    (split, count)
}

#[test]
fn tasks_and_ackers_stay_while_executors_and_workers_change() {
    let t = word_count();
    let plan = Plan::new(&t);
    let (split, _) = ids(&t);
    let r = Rebalance {
        workers: Some(3),
        executors: [(split.clone(), 2)].into(),
    };
    let after = r.apply(&t, &plan).expect("a valid rebalance");
    let new_plan = Plan::new(&after);
    assert_eq!(after.config.workers(), 3);
    assert_eq!(new_plan.task_to_component(), plan.task_to_component());
    assert_eq!(new_plan.ackers, plan.ackers);
    let execs = new_plan.component(&split).map(|c| c.executors.len());
    assert_eq!(execs, Some(2));
}

#[test]
fn bad_requests_say_what_is_wrong() {
    let t = word_count();
    let plan = Plan::new(&t);
    let (split, _) = ids(&t);
    let zero = Rebalance {
        workers: Some(0),
        ..Default::default()
    };
    assert!(zero.check(&t, &plan).is_err());
    let typo = Rebalance {
        executors: [(format!("{split}x"), 1)].into(),
        ..Default::default()
    };
    let e = typo.check(&t, &plan).expect_err("unknown component");
    assert!(e.contains("did you mean"), "{e}");
    let many = Rebalance {
        executors: [(split, 5)].into(),
        ..Default::default()
    };
    let e = many
        .check(&t, &plan)
        .expect_err("more executors than tasks");
    assert!(e.contains("1 to 4"), "{e}");
}
