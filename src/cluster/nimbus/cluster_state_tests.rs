//! Tests of Nimbus's reading and writing of the cluster state.

use super::*;
use crate::cluster::coordination::tree::SharedTree;
use crate::cluster::nimbus::simulation::tests::wordcount;
use std::time::Duration;

fn cluster(hosts: &[(&str, &[u16])]) -> (SharedTree, ClusterState<SharedTree>, Vec<SessionId>) {
    let store = SharedTree::new();
    let state = ClusterState::new(store.clone(), "/storm").unwrap();
    let sessions = hosts
        .iter()
        .map(|(host, ports)| {
            let s = store.open_session(Duration::from_secs(30));
            let info = SupervisorInfo {
                hostname: host.to_string(),
                time_secs: 1,
                uptime_secs: 0,
                ports: ports.to_vec(),
            };
            state.supervisor_heartbeat(s, host, &info).unwrap();
            s
        })
        .collect();
    (store, state, sessions)
}

#[test]
fn works_over_a_shared_trait_object() {
    let store: std::sync::Arc<dyn CoordinationStore> = std::sync::Arc::new(SharedTree::new());
    let state = ClusterState::new(store.clone(), "/").unwrap();
    assert_eq!(state.layout().storms(), "/storms");
    assert_eq!(store.children("/", None).unwrap().len(), SUBTREES.len());
}

#[test]
fn ids_count_submissions_and_the_count_survives_reopening() {
    let (store, mut state, _) = cluster(&[("h", &[1])]);
    let topo = wordcount(&[]);
    let plan = Plan::new(&topo);
    assert_eq!(state.submit(&topo, &plan, 5).unwrap(), "wordcount-1-5");
    assert_eq!(state.submit(&topo, &plan, 6).unwrap(), "wordcount-2-6");
    let mut reopened = ClusterState::new(store, "/storm").unwrap();
    assert_eq!(reopened.submit(&topo, &plan, 7).unwrap(), "wordcount-3-7");
    let base = reopened.storm_base("wordcount-3-7").unwrap().unwrap();
    assert_eq!(base.status, TopologyStatus::Inactive);
    reopened.activate("wordcount-3-7").unwrap();
    let base = reopened.storm_base("wordcount-3-7").unwrap().unwrap();
    assert_eq!(base.status, TopologyStatus::Active);
}

#[test]
fn the_assignment_is_written_only_when_it_changes() {
    let (store, mut state, _) = cluster(&[("h1", &[1]), ("h2", &[1])]);
    let topo = wordcount(&[("topology.workers", 2.into())]);
    let plan = Plan::new(&topo);
    let id = state.submit(&topo, &plan, 5).unwrap();
    assert!(state.assign(&id, &plan, 2, 5).unwrap());
    let version = |s: &SharedTree| {
        s.exists("/storm/assignments/wordcount-1-5", None)
            .unwrap()
            .map(|st| st.version)
    };
    assert_eq!(version(&store), Some(0));
    assert!(!state.assign(&id, &plan, 2, 9).unwrap());
    assert_eq!(version(&store), Some(0));
}

#[test]
fn a_lost_supervisor_moves_only_its_tasks_with_new_start_times() {
    let (_, mut state, sessions) = cluster(&[("h1", &[1, 2]), ("h2", &[1, 2])]);
    let topo = wordcount(&[("topology.workers", 2.into())]);
    let plan = Plan::new(&topo);
    let id = state.submit(&topo, &plan, 5).unwrap();
    state.assign(&id, &plan, 2, 5).unwrap();
    let before = state.assignment(&id).unwrap().unwrap();
    // h2's session ends: its ephemeral node goes, its slots are no longer offered.
    state.store().close_session(sessions[1]).unwrap();
    assert!(state.reassign(&id, &plan, 2, &[], 50).unwrap());
    let after = state.assignment(&id).unwrap().unwrap();
    for (task, slot) in &before.task_to_node_port {
        if slot.node == "h1" {
            assert_eq!(&after.task_to_node_port[task], slot);
            assert_eq!(after.task_to_start_time[task], 5);
        } else {
            assert_eq!(after.task_to_node_port[task].to_string(), "h1:2");
            assert_eq!(after.task_to_start_time[task], 50);
        }
    }
    assert_eq!(after.node_host.keys().collect::<Vec<_>>(), ["h1"]);
}

#[test]
fn a_dead_slot_named_by_nimbus_is_not_used_again() {
    let (_, mut state, _) = cluster(&[("h1", &[1, 2])]);
    let topo = wordcount(&[]);
    let plan = Plan::new(&topo);
    let id = state.submit(&topo, &plan, 5).unwrap();
    state.assign(&id, &plan, 1, 5).unwrap();
    let dead = [Dead::Slot("h1:1".parse().unwrap())];
    assert!(state.reassign(&id, &plan, 1, &dead, 6).unwrap());
    let after = state.assignment(&id).unwrap().unwrap();
    assert!(after
        .task_to_node_port
        .values()
        .all(|s| s.to_string() == "h1:2"));
}

#[test]
fn topologies_do_not_share_slots() {
    let (_, mut state, _) = cluster(&[("h", &[1, 2])]);
    let topo = wordcount(&[]);
    let plan = Plan::new(&topo);
    let a = state.submit(&topo, &plan, 5).unwrap();
    state.assign(&a, &plan, 1, 5).unwrap();
    let b = state.submit(&topo, &plan, 5).unwrap();
    state.assign(&b, &plan, 1, 5).unwrap();
    let slot_of =
        |id: &str| state.assignment(id).unwrap().unwrap().task_to_node_port[&1].to_string();
    assert_eq!((slot_of(&a), slot_of(&b)), ("h:1".into(), "h:2".into()));
    let c = state.submit(&topo, &plan, 5).unwrap();
    assert!(matches!(
        state.assign(&c, &plan, 1, 5),
        Err(ClusterError::Schedule(ScheduleError::NoSlots(_)))
    ));
}

#[test]
fn errors_keep_the_last_ten_and_heartbeats_read_back() {
    let (store, mut state, _) = cluster(&[("h", &[1])]);
    let topo = wordcount(&[]);
    let id = state.submit(&topo, &Plan::new(&topo), 5).unwrap();
    for i in 0..12 {
        let e = TaskError {
            error: format!("boom {i}"),
            time_secs: i,
            worker: None,
        };
        state.report_error(&id, 3, &e).unwrap();
    }
    let errors = state.task_errors(&id, 3).unwrap();
    assert_eq!(errors.len(), KEPT_ERRORS);
    assert_eq!(errors[0].error, "boom 2");
    assert_eq!(errors[9].error, "boom 11");
    let beat = TaskHeartbeat {
        time_secs: 9,
        uptime_secs: 4,
        stats: serde_json::Map::new(),
        listening: None,
    };
    state.task_heartbeat(&id, 3, &beat).unwrap();
    assert_eq!(state.task_heartbeats(&id).unwrap()[&3], beat);
    state.remove_topology(&id).unwrap();
    assert!(state.topology_ids().unwrap().is_empty());
    for sub in SUBTREES {
        let kids = store.children(&format!("/storm/{sub}"), None).unwrap();
        assert!(sub == &"supervisors" || kids.is_empty(), "{sub}: {kids:?}");
    }
}

#[test]
fn data_that_is_not_storms_is_reported_with_its_path() {
    let (store, state, _) = cluster(&[]);
    store.put("/storm/storms/x-1-1", b"{\"name\":1}").unwrap();
    let msg = state.storm_base("x-1-1").err().map(|e| e.to_string());
    assert!(
        msg.as_deref()
            .is_some_and(|m| m
                .starts_with("/storm/storms/x-1-1 holds data that is not what Storm writes there")),
        "{msg:?}"
    );
    assert!(matches!(
        state.activate("nope"),
        Err(ClusterError::NoTopology(_))
    ));
}

#[test]
fn slots_without_fresh_heartbeats_are_dead_after_their_grace_period() {
    let (_, mut state, _) = cluster(&[("h1", &[1]), ("h2", &[1])]);
    let topo = wordcount(&[("topology.workers", 2.into())]);
    let plan = Plan::new(&topo);
    let id = state.submit(&topo, &plan, 100).unwrap();
    state.assign(&id, &plan, 2, 100).unwrap();
    // Just launched: nothing is dead yet, even without heartbeats.
    assert_eq!(state.dead_slots(&id, 120, 30).unwrap(), []);
    let a = state.assignment(&id).unwrap().unwrap();
    let beat = TaskHeartbeat {
        time_secs: 140,
        uptime_secs: 40,
        stats: serde_json::Map::new(),
        listening: None,
    };
    for (task, slot) in &a.task_to_node_port {
        if slot.node == "h1" {
            state.task_heartbeat(&id, *task, &beat).unwrap();
        }
    }
    assert_eq!(
        state.dead_slots(&id, 150, 30).unwrap(),
        [Dead::Slot("h2:1".parse().unwrap())]
    );
    assert_eq!(state.dead_slots(&id, 170, 30).unwrap().len(), 2);
}

#[test]
fn assignment_watches_fire_when_nimbus_writes() {
    let (_, mut state, _) = cluster(&[("h", &[1, 2])]);
    let (w, rx) = crate::cluster::coordination::znode_store::watcher();
    assert!(state.watch_assignments(Some(w)).unwrap().is_empty());
    let topo = wordcount(&[]);
    let plan = Plan::new(&topo);
    let id = state.submit(&topo, &plan, 5).unwrap();
    state.assign(&id, &plan, 1, 5).unwrap();
    let event = rx.try_recv().unwrap();
    assert_eq!(
        event.kind,
        crate::cluster::coordination::znode_store::EventKind::NodeChildrenChanged
    );
    let (w, rx) = crate::cluster::coordination::znode_store::watcher();
    assert!(state.watch_assignment(&id, w).unwrap().is_some());
    let dead = [Dead::Slot("h:1".parse().unwrap())];
    state.reassign(&id, &plan, 1, &dead, 6).unwrap();
    assert_eq!(
        rx.try_recv().map(|e| e.kind),
        Ok(crate::cluster::coordination::znode_store::EventKind::NodeDataChanged)
    );
}

#[test]
fn a_checkpoint_record_is_written_only_over_the_version_its_writer_read() {
    let (_, state, _) = cluster(&[]);
    let record = |txid, holder: &str| CheckpointRecord {
        txid,
        generation: 1,
        time_secs: 1,
        holder: Some(holder.into()),
        replicas: Vec::new(),
    };
    let first = state
        .swap_checkpoint_record("t-1-1", &record(0, "a"), None)
        .unwrap();
    // A second nimbus that read nothing cannot create it again.
    assert!(state
        .swap_checkpoint_record("t-1-1", &record(0, "b"), None)
        .is_err());
    // The one that took it over writes over the version it read; the other, fenced off,
    // can no longer write over what it last wrote.
    let (read, version) = state.checkpoint_record_at("t-1-1").unwrap().unwrap();
    assert_eq!((read, version), (record(0, "a"), first));
    let taken = state
        .swap_checkpoint_record("t-1-1", &record(0, "b"), Some(version))
        .unwrap();
    assert!(state
        .swap_checkpoint_record("t-1-1", &record(5, "a"), Some(first))
        .is_err());
    state
        .swap_checkpoint_record("t-1-1", &record(5, "b"), Some(taken))
        .unwrap();
    assert_eq!(
        state.checkpoint_record("t-1-1").unwrap(),
        Some(record(5, "b"))
    );
}
