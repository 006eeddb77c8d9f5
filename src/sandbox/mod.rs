//! Enforcement beneath the permission layer: child processes with deadlines and process-group
//! kills, and (later) path confinement and the OS jail for bash.
