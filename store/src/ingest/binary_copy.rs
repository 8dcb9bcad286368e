//! Rows for `COPY … from stdin (format binary)`.

use crate::Result;

/// Rows in `COPY … (format binary)` form: a header, then per row its
/// field count and each field's length and bytes (big-endian numbers),
/// then a trailer.
pub(super) struct BinaryCopy {
    data: Vec<u8>,
    rows: usize,
}

impl BinaryCopy {
    /// Room for about `bytes` of rows.
    pub(super) fn with_capacity(bytes: usize) -> Self {
        let mut data = Vec::with_capacity(bytes + 21);
        data.extend_from_slice(b"PGCOPY\n\xff\r\n\0");
        // Flags, then the length of the header extension: none of either.
        data.extend_from_slice(&0i32.to_be_bytes());
        data.extend_from_slice(&0i32.to_be_bytes());
        BinaryCopy { data, rows: 0 }
    }

    pub(super) fn row(&mut self, fields: &[&[u8]]) {
        self.rows += 1;
        self.data
            .extend_from_slice(&(fields.len() as i16).to_be_bytes());
        for field in fields {
            self.data
                .extend_from_slice(&(field.len() as i32).to_be_bytes());
            self.data.extend_from_slice(field);
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.rows == 0
    }

    pub(super) async fn send(
        mut self,
        conn: &mut sqlx::PgConnection,
        statement: &str,
    ) -> Result<()> {
        self.data.extend_from_slice(&(-1i16).to_be_bytes());
        let mut copy = conn.copy_in_raw(statement).await?;
        if let Err(e) = copy.send(self.data).await {
            // Ends the COPY so the connection can be used again.
            let _ = copy.abort(e.to_string()).await;
            return Err(e.into());
        }
        copy.finish().await?;
        Ok(())
    }
}
