//! The `jdbc` connector for PostgreSQL, as Storm's storm-jdbc: a sink bolt inserting (or
//! upserting) one row per tuple in batches (`sink`), with the rows of each checkpoint and its
//! number written in one transaction when `stateful` (`held`); a lookup bolt running a
//! parameterized query per tuple behind a bounded cache (`lookup`); and a spout reading a
//! table or a query incrementally by an increasing column (`spout`). `url`, `pool`, `values`
//! and `args` are what they share; `validate` checks the arguments offline.

mod args;
pub(crate) mod builtin;
mod held;
mod lookup;
mod pool;
mod sink;
mod spout;
pub(crate) mod url;
mod validate;
mod values;
mod values_read;
