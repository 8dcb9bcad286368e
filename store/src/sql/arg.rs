//! The values a shared statement binds, each a type both backends encode.

use chrono::{DateTime, Utc};
use serde_json::value::RawValue;
use sqlx::types::Json;
use sqlx::{Arguments, Database, Encode, Type};
use uuid::Uuid;

use super::render::{Dialect, Shape};
use crate::{Result, StoreError};

/// One argument of a [`super::Sql`]; `None` binds a typed null.
#[derive(Debug, Clone)]
pub(crate) enum Arg {
    Uuid(Option<Uuid>),
    I64(Option<i64>),
    I32(Option<i32>),
    F64(Option<f64>),
    Bool(Option<bool>),
    Text(Option<String>),
    Bytes(Option<Vec<u8>>),
    Time(Option<DateTime<Utc>>),
    /// JSON as serialized, byte for byte: MariaDB keeps JSON as text, so
    /// a value bound for comparison must read as the stored one did.
    Json(Option<Json<Box<RawValue>>>),
    /// A length of time, written as an interval (see `render::Shape`).
    Interval(std::time::Duration),
}

/// An argument as bound: one value, or a list written `(v1, v2, …)`.
#[derive(Debug, Clone)]
pub(super) enum Bound {
    One(Arg),
    List(Vec<Arg>),
}

impl Bound {
    /// How many elements a list has; `None` for one value.
    pub(super) fn shape(&self) -> Shape {
        match self {
            Bound::One(Arg::Interval(_)) => Shape::Interval,
            Bound::One(_) => Shape::One,
            Bound::List(list) => Shape::List(list.len()),
        }
    }

    pub(super) fn element(&self, element: usize) -> &Arg {
        match self {
            Bound::One(arg) => arg,
            Bound::List(list) => &list[element],
        }
    }
}

macro_rules! arg_from {
    ($($type:ty => $variant:ident),* $(,)?) => {$(
        impl From<$type> for Arg {
            fn from(value: $type) -> Arg {
                Arg::$variant(Some(value.into()))
            }
        }
        impl From<Option<$type>> for Arg {
            fn from(value: Option<$type>) -> Arg {
                Arg::$variant(value.map(Into::into))
            }
        }
    )*};
}

arg_from! {
    Uuid => Uuid,
    i64 => I64,
    i32 => I32,
    f64 => F64,
    bool => Bool,
    String => Text,
    &str => Text,
    &String => Text,
    Vec<u8> => Bytes,
    &[u8] => Bytes,
    DateTime<Utc> => Time,
}

impl From<&Uuid> for Arg {
    fn from(value: &Uuid) -> Arg {
        Arg::Uuid(Some(*value))
    }
}

impl From<Option<&Uuid>> for Arg {
    fn from(value: Option<&Uuid>) -> Arg {
        Arg::Uuid(value.copied())
    }
}

impl From<&Option<String>> for Arg {
    fn from(value: &Option<String>) -> Arg {
        Arg::Text(value.clone())
    }
}

impl From<std::time::Duration> for Arg {
    fn from(value: std::time::Duration) -> Arg {
        Arg::Interval(value)
    }
}

impl Arg {
    /// The value as `dialect` binds it: an interval as Postgres'
    /// `make_interval` seconds or MySQL's microseconds.
    pub(super) fn for_dialect(&self, dialect: Dialect) -> Arg {
        match (self, dialect) {
            (Arg::Interval(length), Dialect::Postgres) => Arg::F64(Some(length.as_secs_f64())),
            (Arg::Interval(length), Dialect::MySql) => {
                Arg::I64(Some(i64::try_from(length.as_micros()).unwrap_or(i64::MAX)))
            }
            (other, _) => other.clone(),
        }
    }

    /// `value` as JSON (Postgres `jsonb`, MySQL `json`).
    pub(crate) fn json<T: serde::Serialize + ?Sized>(value: &T) -> Result<Arg> {
        let value = serde_json::value::to_raw_value(value)
            .map_err(|e| StoreError::Statement(format!("a JSON argument: {e}")))?;
        Ok(Arg::Json(Some(Json(value))))
    }
}

/// `values`, in order, encoded for `DB`.
pub(super) fn arguments<'q, DB>(values: Vec<Arg>) -> Result<DB::Arguments<'q>>
where
    DB: Database,
    Option<Uuid>: Encode<'q, DB> + Type<DB>,
    Option<i64>: Encode<'q, DB> + Type<DB>,
    Option<i32>: Encode<'q, DB> + Type<DB>,
    Option<f64>: Encode<'q, DB> + Type<DB>,
    Option<bool>: Encode<'q, DB> + Type<DB>,
    Option<String>: Encode<'q, DB> + Type<DB>,
    Option<Vec<u8>>: Encode<'q, DB> + Type<DB>,
    Option<DateTime<Utc>>: Encode<'q, DB> + Type<DB>,
    Option<Json<Box<RawValue>>>: Encode<'q, DB> + Type<DB>,
{
    let mut out = DB::Arguments::<'q>::default();
    for (index, value) in values.into_iter().enumerate() {
        let added = match value {
            Arg::Uuid(v) => out.add(v),
            Arg::I64(v) => out.add(v),
            Arg::I32(v) => out.add(v),
            Arg::F64(v) => out.add(v),
            Arg::Bool(v) => out.add(v),
            Arg::Text(v) => out.add(v),
            Arg::Bytes(v) => out.add(v),
            Arg::Time(v) => out.add(v),
            Arg::Json(v) => out.add(v),
            // Arg::for_dialect turns intervals into numbers first.
            Arg::Interval(_) => Err("an interval not written for its dialect".into()),
        };
        added.map_err(|e| StoreError::Statement(format!("value {}: {e}", index + 1)))?;
    }
    Ok(out)
}
