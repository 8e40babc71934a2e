//! The `jdbc` connector for PostgreSQL, as Storm's storm-jdbc: a sink bolt inserting (or
//! upserting) one row per tuple in batches (`sink`), with the rows of each checkpoint and its
//! number written in one transaction when `stateful` (`held`); a lookup bolt running a
//! parameterized query per tuple behind a bounded cache (`lookup`); and a spout reading a
//! table or a query incrementally by an increasing column (`spout`). `url`, `pool`, `values`
//! and `args` are what they share; `validate` checks the arguments offline.

pub mod args;
pub mod builtin;
pub mod held;
pub mod lookup;
pub mod pool;
pub mod sink;
pub mod spout;
pub mod url;
pub mod validate;
pub mod values;
mod values_read;
