#!/usr/bin/env bash
# Every intra-doc link in the workspace resolves: no link to a module or
# item that was moved or removed, and no public doc linking to a private
# item (a link that works only with --document-private-items).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
RUSTDOCFLAGS="-D rustdoc::broken_intra_doc_links -D rustdoc::private_intra_doc_links" \
    cargo doc --workspace --no-deps --document-private-items
