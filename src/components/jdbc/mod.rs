//! The `jdbc` connector for PostgreSQL, as Storm's storm-jdbc: a sink bolt inserting (or
//! upserting) one row per tuple in batches (`sink`), with the rows of each checkpoint and its
//! number written in one transaction when `stateful` (`held`); a lookup bolt running a
//! parameterized query per tuple behind a bounded cache (`lookup`); and a spout reading a
//! table or a query incrementally by an increasing column (`spout`). `url`, `pool`, `values`
//! and `args` are what they share; `validate` checks the arguments offline.

pub(crate) mod args;
pub(crate) mod builtin;
pub(crate) mod held;
pub(crate) mod lookup;
pub(crate) mod pool;
pub(crate) mod sink;
pub(crate) mod spout;
pub(crate) mod url;
pub(crate) mod validate;
pub(crate) mod values;
mod values_read;
