//! The `kafka` connector: a spout reading topics (through a consumer group, or, in a
//! checkpointed topology, a fixed share of the partitions whose offsets live in checkpoints)
//! and a sink bolt producing to a topic (transactions committed with checkpoints when
//! `stateful`). Both speak to brokers through librdkafka (the `rdkafka` crate).

pub(crate) mod args;
pub(crate) mod builtin;
pub(crate) mod commits;
pub(crate) mod consumer;
pub(crate) mod lag;
pub(crate) mod offsets;
pub(crate) mod record;
pub(crate) mod sink;
pub(crate) mod spout;

pub(crate) use record::output_fields;
