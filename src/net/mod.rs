//! Moving tuples between workers: the pure frame codec and the links frames travel on
//! (in memory for local mode; TCP for processes and hosts).

pub mod frame;
pub mod link;
