//! The `kafka` connector: a spout reading topics (through a consumer group, or, in a
//! checkpointed topology, a fixed share of the partitions whose offsets live in checkpoints)
//! and a sink bolt producing to a topic (transactions committed with checkpoints when
//! `stateful`). Both speak to brokers through librdkafka (the `rdkafka` crate).

pub mod args;
pub mod builtin;
pub mod commits;
pub mod consumer;
pub mod lag;
pub mod offsets;
pub mod record;
pub mod sink;
pub mod spout;

pub use record::{output_fields, KAFKA_FIELDS};
