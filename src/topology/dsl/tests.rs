//! Tests of the DSL parser.
