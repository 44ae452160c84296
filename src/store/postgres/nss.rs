//! Name lookups in the statically linked build (`.ci/package` on Linux).
//!
//! A static glibc has NSS's `files` and `dns` services built in. Any other
//! service `/etc/nsswitch.conf` names (systemd, mdns, sss, ldap…) it would
//! load as a shared module, which crashes a static process (SIGSEGV: seen with
//! libnss_systemd on glibc 2.36). The store's connection makes the shim's only
//! lookups — the server's host name, and the user name when the URL gives
//! none — so before it the static build keeps to the built-in services: a name
//! only such a module knows fails as an error the store reports, never a
//! crash in the middle of a turn.

/// Keep this process's host and user lookups to the services linked into it.
#[cfg(all(target_os = "linux", target_env = "gnu", target_feature = "crt-static"))]
pub fn builtin_services_only() {
    use std::ffi::{c_char, c_int};
    extern "C" {
        /// glibc: replace nsswitch.conf's line for one database.
        fn __nss_configure_lookup(db: *const c_char, service_line: *const c_char) -> c_int;
    }
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: NUL-terminated literals; called once, before any lookup.
        unsafe {
            __nss_configure_lookup(c"hosts".as_ptr(), c"files dns".as_ptr());
            __nss_configure_lookup(c"passwd".as_ptr(), c"files".as_ptr());
        }
    });
}

/// A dynamically linked process loads NSS modules as glibc means it to.
#[cfg(not(all(target_os = "linux", target_env = "gnu", target_feature = "crt-static")))]
pub fn builtin_services_only() {}
