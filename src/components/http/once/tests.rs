//! The `http` spout's exactly-once bookkeeping, alone: keys taken once, answers held until
//! their checkpoint commits, partial requests resumed, positions restored.

use super::*;

fn answer(key: &str) -> (Answer, tokio::sync::oneshot::Receiver<Response>) {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let a = Answer {
        key: Some(key.into()),
        accepted: 2,
        rejected: 0,
        replies: vec![tx],
    };
    (a, rx)
}

fn status(rx: &mut tokio::sync::oneshot::Receiver<Response>) -> Option<u16> {
    rx.try_recv().ok().map(|r| r.status)
}

fn checkpointed() -> Once {
    let mut once = Once::new(Duration::from_secs(600));
    once.set_checkpoints(true);
    once
}

#[test]
fn an_answer_waits_for_its_checkpoint_and_a_resend_is_not_taken_again() {
    let mut once = checkpointed();
    let (a, mut rx) = answer("k1");
    let Arrival::Take(mut held, skip) = once.arrive(1, a) else {
        panic!("a new key is taken")
    };
    assert!(skip.is_empty());
    let (a, mut rx2) = answer("k1");
    let Arrival::Join(1, joined) = once.arrive(2, a) else {
        panic!("a key in flight joins its request")
    };
    held.replies.extend(joined.replies);
    once.record_done(1, 0);
    once.record_done(1, 1);
    once.done(1, held);
    assert_eq!(status(&mut rx), None, "not committed yet");
    let (a, mut rx3) = answer("k1");
    assert!(matches!(once.arrive(3, a), Arrival::Settled));
    let Value::Map(keys) = once.position() else {
        panic!("a map")
    };
    assert!(matches!(keys.get("k1"), Some(Value::Int(_))));
    once.saved(7);
    once.commits(6);
    assert_eq!(status(&mut rx), None, "an earlier checkpoint committed");
    once.commits(7);
    for rx in [&mut rx, &mut rx2, &mut rx3] {
        assert_eq!(status(rx), Some(200), "every client of the key is answered");
    }
    let (a, mut rx4) = answer("k1");
    assert!(matches!(once.arrive(4, a), Arrival::Settled));
    assert_eq!(
        status(&mut rx4),
        Some(200),
        "a committed key is answered at once"
    );
}

#[test]
fn a_failed_request_is_sent_again_without_its_done_records() {
    let mut once = checkpointed();
    let (a, mut rx) = answer("k");
    let Arrival::Take(held, _) = once.arrive(1, a) else {
        panic!("taken")
    };
    once.record_done(1, 0);
    once.record_done(1, 2);
    once.failed(1, held);
    assert_eq!(status(&mut rx), Some(500));
    let Value::Map(keys) = once.position() else {
        panic!("a map")
    };
    assert_eq!(
        keys.get("k"),
        Some(&Value::List(Box::new(vec![Value::Int(0), Value::Int(2)])))
    );
    let (a, _) = answer("k");
    let Arrival::Take(_, skip) = once.arrive(2, a) else {
        panic!("taken again")
    };
    assert_eq!(skip, vec![0, 2], "the resend skips the records done");
    let (a, _) = answer("fresh");
    let Arrival::Take(held, _) = once.arrive(3, a) else {
        panic!("taken")
    };
    once.failed(3, held);
    let (a, _) = answer("fresh");
    assert!(
        matches!(once.arrive(4, a), Arrival::Take(_, s) if s.is_empty()),
        "a request that failed with nothing done is taken whole"
    );
}

#[test]
fn a_restored_position_knows_done_and_partial_keys() {
    let mut first = checkpointed();
    let (a, _) = answer("whole");
    let Arrival::Take(held, _) = first.arrive(1, a) else {
        panic!("taken")
    };
    first.done(1, held);
    let (a, _) = answer("part");
    assert!(matches!(first.arrive(2, a), Arrival::Take(..)));
    first.record_done(2, 1);
    let position = first.position();
    let mut resumed = checkpointed();
    resumed.restore(&position).expect("restores");
    let (a, mut rx) = answer("whole");
    assert!(matches!(resumed.arrive(1, a), Arrival::Settled));
    assert_eq!(status(&mut rx), Some(200));
    let (a, _) = answer("part");
    assert!(matches!(resumed.arrive(2, a), Arrival::Take(_, s) if s == vec![1]));
    assert!(resumed.restore(&Value::Int(3)).is_err());
}

#[test]
fn without_checkpoints_a_done_request_is_answered_at_once() {
    let mut once = Once::new(Duration::from_secs(600));
    let (a, mut rx) = answer("k");
    let Arrival::Take(held, _) = once.arrive(1, a) else {
        panic!("taken")
    };
    once.done(1, held);
    assert_eq!(status(&mut rx), Some(200));
    let (a, mut rx) = answer("k");
    assert!(matches!(once.arrive(2, a), Arrival::Settled));
    assert_eq!(status(&mut rx), Some(200), "a resend is not emitted again");
}
