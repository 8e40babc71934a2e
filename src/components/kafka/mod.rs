//! The `kafka` connector: a spout reading topics (through a consumer group, or, in a
//! checkpointed topology, a fixed share of the partitions whose offsets live in checkpoints)
//! and a sink bolt producing to a topic (transactions committed with checkpoints when
//! `stateful`). Both speak to brokers through librdkafka (the `rdkafka` crate).

mod args;
pub(crate) mod builtin;
mod commits;
mod consumer;
mod lag;
mod offsets;
mod record;
mod sink;
mod spout;

use record::output_fields;
