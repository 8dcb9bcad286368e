//! What channel statements write differently in MySQL and MariaDB.

/// `email_to` is a JSON array, stored as bound at `param`.
pub(super) fn email_list(param: &str) -> String {
    param.to_owned()
}
