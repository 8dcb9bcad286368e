//! Text columns holding the wire names of enums (statuses, kinds, events,
//! modes), read into the enum: `#[sqlx(try_from = "Text<ProfileStatus>")]`
//! on the row's field. A name no version of ODP wrote is a decode error
//! that names the column and the value, not a string passed on.

use std::error::Error;
use std::str::FromStr;

use serde::de::DeserializeOwned;
use sqlx::error::BoxDynError;
use sqlx::types::Json;
use sqlx::{Database, Decode, MySql, Postgres, Type};

use crate::sql::Arg;

/// A `text not null` column parsed into `T`.
pub struct Text<T>(pub(crate) T);

/// A nullable text column parsed into `Option<T>`.
pub struct OptionalText<T>(Option<T>);

impl<'r, DB: Database, T> Decode<'r, DB> for Text<T>
where
    String: Decode<'r, DB>,
    T: FromStr,
    T::Err: Error + Send + Sync + 'static,
{
    fn decode(value: <DB as Database>::ValueRef<'r>) -> Result<Self, BoxDynError> {
        Ok(Text(<String as Decode<'r, DB>>::decode(value)?.parse()?))
    }
}

impl<'r, DB: Database, T> Decode<'r, DB> for OptionalText<T>
where
    Option<String>: Decode<'r, DB>,
    T: FromStr,
    T::Err: Error + Send + Sync + 'static,
{
    fn decode(value: <DB as Database>::ValueRef<'r>) -> Result<Self, BoxDynError> {
        let text = <Option<String> as Decode<'r, DB>>::decode(value)?;
        Ok(OptionalText(text.map(|t| t.parse()).transpose()?))
    }
}

macro_rules! text_type {
    ($column:ident) => {
        impl<DB: Database, T> Type<DB> for $column<T>
        where
            String: Type<DB>,
        {
            fn type_info() -> DB::TypeInfo {
                <String as Type<DB>>::type_info()
            }

            fn compatible(ty: &DB::TypeInfo) -> bool {
                <String as Type<DB>>::compatible(ty)
            }
        }
    };
}

text_type!(Text);
text_type!(OptionalText);

/// `From<Text<T>> for T` for each enum read from a column (the orphan
/// rule allows no blanket impl): here for other crates' enums, beside
/// their definition for the store's own.
macro_rules! read_as_text {
    ($($enum:ty),+) => {
        $(impl From<$crate::columns::Text<$enum>> for $enum {
            fn from(column: $crate::columns::Text<$enum>) -> $enum {
                column.0
            }
        })+
    };
}

read_as_text!(
    odp_core::EventKind,
    odp_core::ProfileStatus,
    odp_core::domain::ProfileMode,
    odp_core::domain::RequestKind,
    odp_core::domain::RequestStatus,
    odp_core::domain::ChannelKind,
    odp_core::domain::DeliveryStatus,
    odp_core::domain::ReanalysisStatus,
    odp_core::domain::RunOutcome
);
pub(crate) use read_as_text;

impl<T> From<OptionalText<T>> for Option<T> {
    fn from(column: OptionalText<T>) -> Option<T> {
        column.0
    }
}

/// A list column: Postgres' array (`text[]`, `uuid[]`), MySQL's JSON
/// array (uuids hyphenated).
pub(crate) struct List<T>(Vec<T>);

impl<T> From<List<T>> for Vec<T> {
    fn from(list: List<T>) -> Vec<T> {
        list.0
    }
}

impl<T> Type<Postgres> for List<T>
where
    Vec<T>: Type<Postgres>,
{
    fn type_info() -> sqlx::postgres::PgTypeInfo {
        <Vec<T> as Type<Postgres>>::type_info()
    }

    fn compatible(ty: &sqlx::postgres::PgTypeInfo) -> bool {
        <Vec<T> as Type<Postgres>>::compatible(ty)
    }
}

impl<'r, T> Decode<'r, Postgres> for List<T>
where
    Vec<T>: Decode<'r, Postgres>,
{
    fn decode(value: sqlx::postgres::PgValueRef<'r>) -> Result<Self, BoxDynError> {
        Ok(List(<Vec<T> as Decode<Postgres>>::decode(value)?))
    }
}

impl<T> Type<MySql> for List<T> {
    fn type_info() -> sqlx::mysql::MySqlTypeInfo {
        <Json<Vec<T>> as Type<MySql>>::type_info()
    }

    fn compatible(ty: &sqlx::mysql::MySqlTypeInfo) -> bool {
        <Json<Vec<T>> as Type<MySql>>::compatible(ty)
    }
}

impl<'r, T: DeserializeOwned> Decode<'r, MySql> for List<T> {
    fn decode(value: sqlx::mysql::MySqlValueRef<'r>) -> Result<Self, BoxDynError> {
        let Json(list) = <Json<Vec<T>> as Decode<MySql>>::decode(value)?;
        Ok(List(list))
    }
}

/// A count the columns keep as `integer`.
pub(crate) fn whole(value: u32) -> crate::Result<i32> {
    i32::try_from(value)
        .map_err(|_| crate::StoreError::Statement(format!("{value} exceeds an integer")))
}

/// The `hosts` column of continuous profiles and triggers: the hosts a
/// configuration applies to, sorted, as a JSON list; JSON `null` (the
/// column is `not null`) for every host running the service.
pub(crate) fn host_list(hosts: &Option<Vec<String>>) -> crate::Result<Arg> {
    Arg::json(hosts)
}
