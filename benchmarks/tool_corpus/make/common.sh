# Shared by the corpus scripts (sourced, not run).

# cargo_offline DIR: resolve every crates.io dependency under DIR from Debian's packaged crates
# (librust-*-dev, /usr/share/cargo/registry), offline.
cargo_offline() {
    mkdir -p "$1/.cargo"
    cat > "$1/.cargo/config.toml" <<'EOF_CONFIG'
[source.crates-io]
replace-with = "debian"
[source.debian]
directory = "/usr/share/cargo/registry"
[net]
offline = true
EOF_CONFIG
}
