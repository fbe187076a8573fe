//! The raw bindings link and agree with the loaded library.
use alpa_sys::*;
use std::ffi::CStr;

#[test]
fn version_matches_header() {
    unsafe {
        assert_eq!(alpa_version_number(), ALPA_VERSION_NUMBER);
        let v = CStr::from_ptr(alpa_version_string()).to_str().unwrap();
        assert_eq!(
            v,
            format!("{}.{}.{}", ALPA_VERSION_MAJOR, ALPA_VERSION_MINOR, ALPA_VERSION_PATCH)
        );
    }
}

#[test]
fn error_out_param() {
    unsafe {
        let mut cluster: *mut alpa_cluster = std::ptr::null_mut();
        let mut err: *mut alpa_error = std::ptr::null_mut();
        let name = b"no-such-cluster\0";
        let st = alpa_cluster_create_preset(&mut cluster, name.as_ptr() as *const _, 0, &mut err);
        assert_eq!(st, ALPA_ERR_INVALID_ARGUMENT as i32);
        assert!(cluster.is_null());
        assert!(!err.is_null());
        assert_eq!(alpa_error_code(err), st);
        let msg = CStr::from_ptr(alpa_error_message(err)).to_string_lossy().into_owned();
        assert!(msg.contains("no-such-cluster"), "{}", msg);
        alpa_error_free(err);
    }
}

#[test]
fn experimental_manual_plan_init() {
    unsafe {
        let mut spec = alpa_manual_plan::default();
        let st = alpa_manual_plan_init(
            &mut spec,
            std::mem::size_of::<alpa_manual_plan>(),
            std::ptr::null_mut(),
        );
        assert_eq!(st, ALPA_OK);
        assert_eq!(spec.struct_size, std::mem::size_of::<alpa_manual_plan>());
        assert_eq!(spec.version, 2);
        assert_eq!(spec.data_parallel, 1);
        assert_eq!(spec.tensor_inside_host, 1);
        assert_eq!(spec.virtual_stages, 1);
    }
}
