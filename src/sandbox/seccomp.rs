//! The seccomp filter every jailed command runs under, written by hand as classic BPF: this
//! module builds the instructions (plain data, safe code); `sys` installs them in the child
//! (Landlock) or hands them to bubblewrap on a descriptor (`--seccomp FD`), so under both
//! backends the filter is in force from the command's first instruction.
//!
//! The program checks the architecture first (a 32-bit or x32 call has other numbers, so the
//! list below would not apply to it: such a process is killed, it could not work with every
//! call failing anyway), then denies with `EPERM` (never kills), so a tool fails with an
//! ordinary "Operation not permitted":
//! - always: `ioctl(TIOCSTI)` and `ioctl(TIOCLINUX)` (typing into a terminal; the request is
//!   compared on its low 32 bits because the kernel truncates it there), `ptrace`,
//!   `process_vm_readv/writev`, the mount calls old and new (`mount`, `umount2`, `pivot_root`,
//!   `move_mount`, `open_tree`, `fsopen`, `fsconfig`, `fsmount`, `fspick`, `mount_setattr`),
//!   the kernel keyring, `bpf`, `perf_event_open`, `kexec_*`, module loading,
//!   `open_by_handle_at`, `mknod`/`mknodat` of character and block devices (fifos and sockets
//!   stay), `unshare` and `clone` with `CLONE_NEWUSER` and every `setns`;
//! - `clone3` and `io_uring_setup` fail with `ENOSYS` instead: libc and runtimes then fall back
//!   to `clone` (whose flags the filter can see, unlike `clone3`'s, which sit in memory) and to
//!   plain system calls (io_uring operations would bypass every rule here);
//! - metadata: the `chown` and `setxattr`/`removexattr` families outright. Seccomp cannot see
//!   paths and Landlock has no right for metadata, so these cannot be confined to the
//!   workspace; agents rarely need them. `chmod` and `utimensat` stay (`chmod +x` and `touch`
//!   in the workspace must work): under Landlock a command can still change the mode bits and
//!   times of files outside the workspace that it owns (as root: any), which the README and
//!   `reasonix doctor` say;
//! - with `[sandbox] network = false`: `socket` for every family but `AF_UNIX`, and for
//!   `AF_UNIX` every type but stream and seqpacket; the same types for `socketpair`; `connect`,
//!   `bind`, `listen`, `accept`, `accept4`; and `sendto` with a destination address. Why that
//!   suffices: a socket that can neither connect nor bind reaches nothing, and the only
//!   sockets left are stream and seqpacket unix sockets, which refuse or ignore a destination
//!   address. That matters because `sendmsg` and `sendmmsg` carry their address inside a
//!   struct the filter cannot read: with a datagram socket (even one from `socketpair`) they
//!   could reach a host socket such as `/dev/log`, hence no datagram unix sockets at all.
//!   `socketpair` keeps working, so do pipes. TCP, UDP, path and abstract unix sockets all fail
//!   at `socket` or `connect`, under bubblewrap too (its network namespace does not cover unix
//!   sockets at a path).

/// One classic BPF instruction, laid out like the kernel's `struct sock_filter`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C)]
pub struct Insn {
    pub code: u16,
    pub jt: u8,
    pub jf: u8,
    pub k: u32,
}

/// The instruction set architectures the filter knows the system call numbers of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arch {
    X86_64,
    Aarch64,
}

impl Arch {
    /// The architecture this binary was built for, if the filter supports it.
    pub fn native() -> Option<Arch> {
        if cfg!(target_arch = "x86_64") {
            Some(Arch::X86_64)
        } else if cfg!(target_arch = "aarch64") {
            Some(Arch::Aarch64)
        } else {
            None
        }
    }

    /// `AUDIT_ARCH_*`, as `seccomp_data.arch` reports it.
    fn audit(self) -> u32 {
        match self {
            Arch::X86_64 => 0xC000_003E,
            Arch::Aarch64 => 0xC000_00B7,
        }
    }
}

const LD_W_ABS: u16 = 0x20;
const JMP_JEQ_K: u16 = 0x15;
const JMP_JGE_K: u16 = 0x35;
const JMP_JA: u16 = 0x05;
const ALU_AND_K: u16 = 0x54;
const RET_K: u16 = 0x06;

const RET_ALLOW: u32 = 0x7fff_0000;
const RET_KILL_PROCESS: u32 = 0x8000_0000;
const RET_ERRNO: u32 = 0x0005_0000;

/// Offsets in `struct seccomp_data`.
const NR: u32 = 0;
const ARCH: u32 = 4;
/// The low 32 bits of argument `i` (both architectures are little-endian).
fn arg_lo(i: u32) -> u32 {
    16 + 8 * i
}
fn arg_hi(i: u32) -> u32 {
    arg_lo(i) + 4
}

/// x32 calls on x86_64 have this bit set in the number.
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

const TIOCSTI: u32 = 0x5412;
const TIOCLINUX: u32 = 0x541C;
const S_IFMT: u32 = 0o170000;
const S_IFCHR: u32 = 0o020000;
const S_IFBLK: u32 = 0o060000;
const CLONE_NEWUSER: u32 = 0x1000_0000;
const AF_UNIX: u32 = 1;
const SOCK_TYPE_MASK: u32 = 0xf;
const SOCK_STREAM: u32 = 1;
const SOCK_SEQPACKET: u32 = 5;
const EPERM: u32 = 1;
const ENOSYS: u32 = 38;

/// The system calls the filter names, by meaning; [`Arch::number`] maps them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sys {
    Ioctl,
    Ptrace,
    ProcessVmReadv,
    ProcessVmWritev,
    Mount,
    Umount2,
    PivotRoot,
    MoveMount,
    OpenTree,
    Fsopen,
    Fsconfig,
    Fsmount,
    Fspick,
    MountSetattr,
    Keyctl,
    AddKey,
    RequestKey,
    Bpf,
    PerfEventOpen,
    KexecLoad,
    KexecFileLoad,
    InitModule,
    FinitModule,
    DeleteModule,
    OpenByHandleAt,
    Mknod,
    Mknodat,
    Unshare,
    Setns,
    Clone,
    Clone3,
    IoUringSetup,
    IoUringEnter,
    IoUringRegister,
    Chown,
    Fchown,
    Lchown,
    Fchownat,
    Setxattr,
    Lsetxattr,
    Fsetxattr,
    Removexattr,
    Lremovexattr,
    Fremovexattr,
    Setxattrat,
    Removexattrat,
    Socket,
    Socketpair,
    Connect,
    Bind,
    Listen,
    Accept,
    Accept4,
    Sendto,
}

impl Arch {
    /// The call's number on this architecture; `None` where it does not exist (aarch64 has
    /// only the `*at` forms of `mknod`, `chown` and `lchown`).
    fn number(self, call: Sys) -> Option<u32> {
        use Sys::*;
        let (x86_64, aarch64) = match call {
            Ioctl => (16, Some(29)),
            Ptrace => (101, Some(117)),
            ProcessVmReadv => (310, Some(270)),
            ProcessVmWritev => (311, Some(271)),
            Mount => (165, Some(40)),
            Umount2 => (166, Some(39)),
            PivotRoot => (155, Some(41)),
            MoveMount => (429, Some(429)),
            OpenTree => (428, Some(428)),
            Fsopen => (430, Some(430)),
            Fsconfig => (431, Some(431)),
            Fsmount => (432, Some(432)),
            Fspick => (433, Some(433)),
            MountSetattr => (442, Some(442)),
            Keyctl => (250, Some(219)),
            AddKey => (248, Some(217)),
            RequestKey => (249, Some(218)),
            Bpf => (321, Some(280)),
            PerfEventOpen => (298, Some(241)),
            KexecLoad => (246, Some(104)),
            KexecFileLoad => (320, Some(294)),
            InitModule => (175, Some(105)),
            FinitModule => (313, Some(273)),
            DeleteModule => (176, Some(106)),
            OpenByHandleAt => (304, Some(265)),
            Mknod => (133, None),
            Mknodat => (259, Some(33)),
            Unshare => (272, Some(97)),
            Setns => (308, Some(268)),
            Clone => (56, Some(220)),
            Clone3 => (435, Some(435)),
            IoUringSetup => (425, Some(425)),
            IoUringEnter => (426, Some(426)),
            IoUringRegister => (427, Some(427)),
            Chown => (92, None),
            Fchown => (93, Some(55)),
            Lchown => (94, None),
            Fchownat => (260, Some(54)),
            Setxattr => (188, Some(5)),
            Lsetxattr => (189, Some(6)),
            Fsetxattr => (190, Some(7)),
            Removexattr => (197, Some(14)),
            Lremovexattr => (198, Some(15)),
            Fremovexattr => (199, Some(16)),
            Setxattrat => (463, Some(463)),
            Removexattrat => (466, Some(466)),
            Socket => (41, Some(198)),
            Socketpair => (53, Some(199)),
            Connect => (42, Some(203)),
            Bind => (49, Some(200)),
            Listen => (50, Some(201)),
            Accept => (43, Some(202)),
            Accept4 => (288, Some(242)),
            Sendto => (44, Some(206)),
        };
        match self {
            Arch::X86_64 => Some(x86_64),
            Arch::Aarch64 => aarch64,
        }
    }
}

/// When a rule denies its call, judged on the call's arguments.
#[derive(Debug, Clone, Copy)]
enum When {
    Always,
    /// The low 32 bits of the argument equal one of these values.
    ArgIs(u32, &'static [u32]),
    /// The low 32 bits of the argument, masked, equal one of these values.
    ArgMaskedIs(u32, u32, &'static [u32]),
    /// The low 32 bits of the argument, masked, equal none of these values.
    ArgMaskedNotIn(u32, u32, &'static [u32]),
    /// The whole 64-bit argument is not zero (a pointer is given).
    ArgNonZero(u32),
}

struct Rule {
    call: Sys,
    when: &'static [When],
    errno: u32,
}

const fn deny(call: Sys) -> Rule {
    Rule {
        call,
        when: &[When::Always],
        errno: EPERM,
    }
}

const fn deny_if(call: Sys, when: &'static [When]) -> Rule {
    Rule {
        call,
        when,
        errno: EPERM,
    }
}

const fn unsupported(call: Sys) -> Rule {
    Rule {
        call,
        when: &[When::Always],
        errno: ENOSYS,
    }
}

const DEVICE_TYPES: &[u32] = &[S_IFCHR, S_IFBLK];
const LOCAL_SOCKET_TYPES: &[u32] = &[SOCK_STREAM, SOCK_SEQPACKET];

const ALWAYS: &[Rule] = &[
    deny_if(Sys::Ioctl, &[When::ArgIs(1, &[TIOCSTI, TIOCLINUX])]),
    deny(Sys::Ptrace),
    deny(Sys::ProcessVmReadv),
    deny(Sys::ProcessVmWritev),
    deny(Sys::Mount),
    deny(Sys::Umount2),
    deny(Sys::PivotRoot),
    deny(Sys::MoveMount),
    deny(Sys::OpenTree),
    deny(Sys::Fsopen),
    deny(Sys::Fsconfig),
    deny(Sys::Fsmount),
    deny(Sys::Fspick),
    deny(Sys::MountSetattr),
    deny(Sys::Keyctl),
    deny(Sys::AddKey),
    deny(Sys::RequestKey),
    deny(Sys::Bpf),
    deny(Sys::PerfEventOpen),
    deny(Sys::KexecLoad),
    deny(Sys::KexecFileLoad),
    deny(Sys::InitModule),
    deny(Sys::FinitModule),
    deny(Sys::DeleteModule),
    deny(Sys::OpenByHandleAt),
    deny_if(Sys::Mknod, &[When::ArgMaskedIs(1, S_IFMT, DEVICE_TYPES)]),
    deny_if(Sys::Mknodat, &[When::ArgMaskedIs(2, S_IFMT, DEVICE_TYPES)]),
    deny_if(
        Sys::Unshare,
        &[When::ArgMaskedIs(0, CLONE_NEWUSER, &[CLONE_NEWUSER])],
    ),
    deny_if(
        Sys::Clone,
        &[When::ArgMaskedIs(0, CLONE_NEWUSER, &[CLONE_NEWUSER])],
    ),
    deny(Sys::Setns),
    unsupported(Sys::Clone3),
    unsupported(Sys::IoUringSetup),
    unsupported(Sys::IoUringEnter),
    unsupported(Sys::IoUringRegister),
    deny(Sys::Chown),
    deny(Sys::Fchown),
    deny(Sys::Lchown),
    deny(Sys::Fchownat),
    deny(Sys::Setxattr),
    deny(Sys::Lsetxattr),
    deny(Sys::Fsetxattr),
    deny(Sys::Removexattr),
    deny(Sys::Lremovexattr),
    deny(Sys::Fremovexattr),
    deny(Sys::Setxattrat),
    deny(Sys::Removexattrat),
];

const NO_NETWORK: &[Rule] = &[
    deny_if(
        Sys::Socket,
        &[
            When::ArgMaskedNotIn(0, u32::MAX, &[AF_UNIX]),
            When::ArgMaskedNotIn(1, SOCK_TYPE_MASK, LOCAL_SOCKET_TYPES),
        ],
    ),
    deny_if(
        Sys::Socketpair,
        &[
            When::ArgMaskedNotIn(0, u32::MAX, &[AF_UNIX]),
            When::ArgMaskedNotIn(1, SOCK_TYPE_MASK, LOCAL_SOCKET_TYPES),
        ],
    ),
    deny(Sys::Connect),
    deny(Sys::Bind),
    deny(Sys::Listen),
    deny(Sys::Accept),
    deny(Sys::Accept4),
    deny_if(Sys::Sendto, &[When::ArgNonZero(4)]),
];

/// The filter for a jailed command on `arch`; `network` is `[sandbox] network`.
pub fn program(arch: Arch, network: bool) -> Vec<Insn> {
    let mut p = vec![
        stmt(LD_W_ABS, ARCH),
        jump(JMP_JEQ_K, arch.audit(), 1, 0),
        stmt(RET_K, RET_KILL_PROCESS),
        stmt(LD_W_ABS, NR),
    ];
    if arch == Arch::X86_64 {
        p.push(jump(JMP_JGE_K, X32_SYSCALL_BIT, 0, 1));
        p.push(stmt(RET_K, RET_KILL_PROCESS));
    }
    let rules = ALWAYS
        .iter()
        .chain(if network { &[][..] } else { NO_NETWORK });
    for rule in rules {
        if let Some(nr) = arch.number(rule.call) {
            push_rule(&mut p, nr, rule);
        }
    }
    p.push(stmt(RET_K, RET_ALLOW));
    p
}

/// The program as the bytes bubblewrap reads from `--seccomp FD` (native endianness).
pub fn to_bytes(program: &[Insn]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(program.len() * 8);
    for insn in program {
        bytes.extend_from_slice(&insn.code.to_ne_bytes());
        bytes.push(insn.jt);
        bytes.push(insn.jf);
        bytes.extend_from_slice(&insn.k.to_ne_bytes());
    }
    bytes
}

fn stmt(code: u16, k: u32) -> Insn {
    Insn {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u16, k: u32, jt: u8, jf: u8) -> Insn {
    Insn { code, jt, jf, k }
}

/// Appends one rule. On entry and on every way out but the denial, the accumulator holds the
/// call number. Layout: `jeq nr` (else skip the block), the conditions (each jumps to the
/// denial when it holds), reload the number, jump over the denial, the denial.
fn push_rule(p: &mut Vec<Insn>, nr: u32, rule: &Rule) {
    let start = p.len();
    p.push(jump(JMP_JEQ_K, nr, 0, 0));
    // Indices of jumps whose true branch (`Some(true)`) or false branch must reach the denial.
    let mut to_deny: Vec<(usize, bool)> = Vec::new();
    let mut always = false;
    for when in rule.when {
        match *when {
            When::Always => always = true,
            When::ArgIs(arg, values) => {
                p.push(stmt(LD_W_ABS, arg_lo(arg)));
                for &v in values {
                    to_deny.push((p.len(), true));
                    p.push(jump(JMP_JEQ_K, v, 0, 0));
                }
            }
            When::ArgMaskedIs(arg, mask, values) => {
                p.push(stmt(LD_W_ABS, arg_lo(arg)));
                p.push(stmt(ALU_AND_K, mask));
                for &v in values {
                    to_deny.push((p.len(), true));
                    p.push(jump(JMP_JEQ_K, v, 0, 0));
                }
            }
            When::ArgMaskedNotIn(arg, mask, values) => {
                p.push(stmt(LD_W_ABS, arg_lo(arg)));
                if mask != u32::MAX {
                    p.push(stmt(ALU_AND_K, mask));
                }
                let n = values.len();
                for (i, &v) in values.iter().enumerate() {
                    // A match skips the remaining comparisons and the jump to the denial.
                    let skip = u8::try_from(n - i).unwrap_or(u8::MAX);
                    p.push(jump(JMP_JEQ_K, v, skip, 0));
                }
                to_deny.push((p.len(), true));
                p.push(stmt(JMP_JA, 0));
            }
            When::ArgNonZero(arg) => {
                for offset in [arg_lo(arg), arg_hi(arg)] {
                    p.push(stmt(LD_W_ABS, offset));
                    to_deny.push((p.len(), false));
                    p.push(jump(JMP_JEQ_K, 0, 0, 0));
                }
            }
        }
    }
    if !always {
        p.push(stmt(LD_W_ABS, NR));
        p.push(stmt(JMP_JA, 1));
    }
    let deny_at = p.len();
    p.push(stmt(RET_K, RET_ERRNO | rule.errno));
    for (at, on_true) in to_deny {
        let offset = offset(at, deny_at);
        if p[at].code == JMP_JA {
            p[at].k = u32::from(offset);
        } else if on_true {
            p[at].jt = offset;
        } else {
            p[at].jf = offset;
        }
    }
    p[start].jf = offset(start, p.len());
}

/// The relative jump from the instruction at `from` to the one at `to`. Blocks are a few
/// dozen instructions at most, far below the 255 a jump can span.
fn offset(from: usize, to: usize) -> u8 {
    u8::try_from(to - from - 1).unwrap_or(u8::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A classic BPF interpreter for the instructions the builder emits.
    fn run(program: &[Insn], arch: u32, nr: u32, args: [u64; 6]) -> u32 {
        let mut data = [0u8; 64];
        data[0..4].copy_from_slice(&nr.to_le_bytes());
        data[4..8].copy_from_slice(&arch.to_le_bytes());
        for (i, a) in args.iter().enumerate() {
            data[16 + 8 * i..24 + 8 * i].copy_from_slice(&a.to_le_bytes());
        }
        let word = |k: u32| {
            let k = k as usize;
            u32::from_le_bytes(data[k..k + 4].try_into().unwrap())
        };
        let (mut pc, mut acc) = (0usize, 0u32);
        loop {
            let insn = program[pc];
            pc += 1;
            match insn.code {
                LD_W_ABS => acc = word(insn.k),
                ALU_AND_K => acc &= insn.k,
                JMP_JA => pc += insn.k as usize,
                JMP_JEQ_K => pc += usize::from(if acc == insn.k { insn.jt } else { insn.jf }),
                JMP_JGE_K => pc += usize::from(if acc >= insn.k { insn.jt } else { insn.jf }),
                RET_K => return insn.k,
                other => panic!("unexpected opcode {other:#x}"),
            }
        }
    }

    const EPERM_RET: u32 = RET_ERRNO | EPERM;

    fn check(arch: Arch) {
        let n = |call| arch.number(call).unwrap();
        let closed = program(arch, false);
        let open = program(arch, true);
        let audit = arch.audit();
        let call = |p: &[Insn], call, args| run(p, audit, n(call), args);
        assert!(closed.len() < 4096 && open.len() < closed.len());
        // The architecture check comes first.
        assert_eq!(run(&closed, 0x4000_0003, 0, [0; 6]), RET_KILL_PROCESS);
        // Terminal injection, whatever garbage sits in the upper half of the request.
        for request in [
            u64::from(TIOCSTI),
            0xdead_beef_0000_5412,
            u64::from(TIOCLINUX),
        ] {
            assert_eq!(call(&open, Sys::Ioctl, [0, request, 0, 0, 0, 0]), EPERM_RET);
        }
        assert_eq!(call(&open, Sys::Ioctl, [0, 0x5413, 0, 0, 0, 0]), RET_ALLOW);
        for denied in [Sys::Ptrace, Sys::Mount, Sys::Bpf, Sys::Setns, Sys::Fchownat] {
            assert_eq!(call(&open, denied, [0; 6]), EPERM_RET, "{denied:?}");
        }
        assert_eq!(call(&open, Sys::Clone3, [0; 6]), RET_ERRNO | ENOSYS);
        // Devices no, fifos and regular files yes.
        let mknodat = |mode: u32| call(&open, Sys::Mknodat, [0, 0, u64::from(mode), 0, 0, 0]);
        assert_eq!(mknodat(S_IFBLK | 0o600), EPERM_RET);
        assert_eq!(mknodat(S_IFCHR | 0o600), EPERM_RET);
        assert_eq!(mknodat(0o010000 | 0o600), RET_ALLOW);
        assert_eq!(mknodat(0o100000 | 0o600), RET_ALLOW);
        // New user namespaces no, threads and plain forks yes.
        let clone = |flags: u64| call(&open, Sys::Clone, [flags, 0, 0, 0, 0, 0]);
        assert_eq!(clone(0x1000_0000 | 17), EPERM_RET);
        assert_eq!(clone(17), RET_ALLOW);
        assert_eq!(clone(0x003d_0f00), RET_ALLOW);
        assert_eq!(
            call(&open, Sys::Unshare, [0x1000_0000, 0, 0, 0, 0, 0]),
            EPERM_RET
        );
        assert_eq!(
            call(&open, Sys::Unshare, [0x0000_0200, 0, 0, 0, 0, 0]),
            RET_ALLOW
        );
        // Ordinary calls pass.
        assert_eq!(run(&closed, audit, 0, [0; 6]), RET_ALLOW);
        // The network, off and on.
        let socket =
            |p: &[Insn], family: u64, kind: u64| call(p, Sys::Socket, [family, kind, 0, 0, 0, 0]);
        assert_eq!(socket(&closed, 2, 1), EPERM_RET);
        assert_eq!(socket(&closed, 10, 2), EPERM_RET);
        assert_eq!(socket(&closed, 1, 2), EPERM_RET);
        assert_eq!(socket(&closed, 1, 1 | 0o2000000), RET_ALLOW);
        assert_eq!(socket(&closed, 1, 5), RET_ALLOW);
        assert_eq!(socket(&open, 2, 2), RET_ALLOW);
        assert_eq!(
            call(&closed, Sys::Socketpair, [1, 1, 0, 0, 0, 0]),
            RET_ALLOW
        );
        assert_eq!(
            call(&closed, Sys::Socketpair, [1, 2, 0, 0, 0, 0]),
            EPERM_RET
        );
        assert_eq!(call(&closed, Sys::Connect, [3, 0, 0, 0, 0, 0]), EPERM_RET);
        assert_eq!(call(&open, Sys::Connect, [3, 0, 0, 0, 0, 0]), RET_ALLOW);
        let sendto = |addr: u64| call(&closed, Sys::Sendto, [3, 0, 0, 0, addr, 0]);
        assert_eq!(sendto(0), RET_ALLOW);
        assert_eq!(sendto(0x7fff_0000_1000), EPERM_RET);
        assert_eq!(sendto(0x7fff_0000_0000), EPERM_RET);
    }

    #[test]
    fn the_filter_denies_what_the_module_doc_says_on_both_architectures() {
        check(Arch::X86_64);
        check(Arch::Aarch64);
        // x32 numbers on x86_64 would bypass the table.
        let p = program(Arch::X86_64, true);
        assert_eq!(
            run(&p, Arch::X86_64.audit(), X32_SYSCALL_BIT | 101, [0; 6]),
            RET_KILL_PROCESS
        );
    }

    #[test]
    fn the_numbers_match_the_native_table() {
        let Some(arch) = Arch::native() else { return };
        let n = |call| i64::from(arch.number(call).unwrap());
        assert_eq!(n(Sys::Ioctl), libc::SYS_ioctl);
        assert_eq!(n(Sys::Ptrace), libc::SYS_ptrace);
        assert_eq!(n(Sys::ProcessVmWritev), libc::SYS_process_vm_writev);
        assert_eq!(n(Sys::Umount2), libc::SYS_umount2);
        assert_eq!(n(Sys::PivotRoot), libc::SYS_pivot_root);
        assert_eq!(n(Sys::MountSetattr), libc::SYS_mount_setattr);
        assert_eq!(n(Sys::RequestKey), libc::SYS_request_key);
        assert_eq!(n(Sys::PerfEventOpen), libc::SYS_perf_event_open);
        assert_eq!(n(Sys::KexecFileLoad), libc::SYS_kexec_file_load);
        assert_eq!(n(Sys::FinitModule), libc::SYS_finit_module);
        assert_eq!(n(Sys::DeleteModule), libc::SYS_delete_module);
        assert_eq!(n(Sys::OpenByHandleAt), libc::SYS_open_by_handle_at);
        assert_eq!(n(Sys::Mknodat), libc::SYS_mknodat);
        assert_eq!(n(Sys::Unshare), libc::SYS_unshare);
        assert_eq!(n(Sys::Setns), libc::SYS_setns);
        assert_eq!(n(Sys::Clone), libc::SYS_clone);
        assert_eq!(n(Sys::Clone3), libc::SYS_clone3);
        assert_eq!(n(Sys::IoUringRegister), libc::SYS_io_uring_register);
        assert_eq!(n(Sys::Fchownat), libc::SYS_fchownat);
        assert_eq!(n(Sys::Fremovexattr), libc::SYS_fremovexattr);
        assert_eq!(n(Sys::Lsetxattr), libc::SYS_lsetxattr);
        assert_eq!(n(Sys::Socketpair), libc::SYS_socketpair);
        assert_eq!(n(Sys::Accept4), libc::SYS_accept4);
        assert_eq!(n(Sys::Listen), libc::SYS_listen);
        assert_eq!(n(Sys::Sendto), libc::SYS_sendto);
        assert_eq!(n(Sys::Keyctl), libc::SYS_keyctl);
        assert_eq!(n(Sys::Bpf), libc::SYS_bpf);
        if arch == Arch::X86_64 {
            assert_eq!(n(Sys::Mknod), libc::SYS_mknod);
            assert_eq!(n(Sys::Lchown), libc::SYS_lchown);
        }
    }

    #[test]
    fn bytes_are_eight_per_instruction() {
        let p = program(Arch::X86_64, false);
        let bytes = to_bytes(&p);
        assert_eq!(bytes.len(), p.len() * 8);
        assert_eq!(&bytes[..8], &[0x20, 0, 0, 0, 4, 0, 0, 0]);
    }
}
