//! Text columns holding the wire names of enums (statuses, kinds, events,
//! modes), read into the enum: `#[sqlx(try_from = "Text<ProfileStatus>")]`
//! on the row's field. A name no version of ODP wrote is a decode error
//! that names the column and the value, not a string passed on.

use std::error::Error;
use std::str::FromStr;

use sqlx::error::BoxDynError;
use sqlx::{Database, Decode, Type};

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
    odp_api_types::ProfileMode,
    odp_api_types::RequestKind,
    odp_api_types::RequestStatus,
    odp_api_types::DeliveryStatus,
    odp_api_types::ReanalysisStatus,
    odp_api_types::RunOutcome
);
pub(crate) use read_as_text;

impl<T> From<OptionalText<T>> for Option<T> {
    fn from(column: OptionalText<T>) -> Option<T> {
        column.0
    }
}
