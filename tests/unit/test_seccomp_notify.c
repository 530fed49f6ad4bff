/* tests/unit/test_seccomp_notify.c: the notifying filter (a trail is written) against the
 * plain one, in simulation: for every example role and every row of policy_tables.h, plus the
 * second filter's cases, the one merged program allows exactly what the two stacked filters
 * allow, and notifies exactly where they answer EPERM. And the names a denial entry carries. */
#include "policy/policy.h"
#include "sandbox/internal.h"
#include "tests/unit/policy_tables.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>

/* A classic-BPF interpreter for seccomp programs: the instructions libseccomp emits (ld abs,
 * ld imm, alu and/or, jmp ja/jeq/jgt/jge/jset, ret, tax/txa, ld/st mem). Any other opcode, an
 * out-of-range load or jump, or running off the end fails the test. */
static uint32_t bpf_run(const struct sock_filter *prog, size_t n, const struct seccomp_data *d)
{
    uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = {0};
    const unsigned char *data = (const unsigned char *)d;
    for (size_t pc = 0; pc < n; pc++) {
        const struct sock_filter *i = &prog[pc];
        switch (i->code) {
        case BPF_LD | BPF_W | BPF_ABS:
            assert_true(i->k % 4 == 0 && i->k + 4 <= sizeof(*d));
            memcpy(&a, data + i->k, 4);
            break;
        case BPF_LD | BPF_IMM: a = i->k; break;
        case BPF_LDX | BPF_IMM: x = i->k; break;
        case BPF_LD | BPF_MEM:
            assert_true(i->k < BPF_MEMWORDS);
            a = mem[i->k];
            break;
        case BPF_LDX | BPF_MEM:
            assert_true(i->k < BPF_MEMWORDS);
            x = mem[i->k];
            break;
        case BPF_ST:
            assert_true(i->k < BPF_MEMWORDS);
            mem[i->k] = a;
            break;
        case BPF_STX:
            assert_true(i->k < BPF_MEMWORDS);
            mem[i->k] = x;
            break;
        case BPF_ALU | BPF_AND | BPF_K: a &= i->k; break;
        case BPF_ALU | BPF_OR | BPF_K: a |= i->k; break;
        case BPF_ALU | BPF_AND | BPF_X: a &= x; break;
        case BPF_MISC | BPF_TAX: x = a; break;
        case BPF_MISC | BPF_TXA: a = x; break;
        case BPF_JMP | BPF_JA: pc += i->k; break;
        case BPF_JMP | BPF_JEQ | BPF_K: pc += a == i->k ? i->jt : i->jf; break;
        case BPF_JMP | BPF_JGT | BPF_K: pc += a > i->k ? i->jt : i->jf; break;
        case BPF_JMP | BPF_JGE | BPF_K: pc += a >= i->k ? i->jt : i->jf; break;
        case BPF_JMP | BPF_JSET | BPF_K: pc += (a & i->k) ? i->jt : i->jf; break;
        case BPF_JMP | BPF_JEQ | BPF_X: pc += a == x ? i->jt : i->jf; break;
        case BPF_JMP | BPF_JGT | BPF_X: pc += a > x ? i->jt : i->jf; break;
        case BPF_JMP | BPF_JGE | BPF_X: pc += a >= x ? i->jt : i->jf; break;
        case BPF_RET | BPF_K: return i->k;
        case BPF_RET | BPF_A: return a;
        default: fail_msg("unexpected BPF opcode 0x%x at %zu", i->code, pc);
        }
    }
    fail_msg("the program ran off its end");
    return 0;
}

static struct policy *load_case(const struct role_case *rc)
{
    struct policy *p = NULL;
    struct policy_diags d = {0};
    int r;
    if (!rc->file) {
        r = policy_load_default(&p);
    } else {
        const char *top = getenv("TOP");
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", top ? top : ".", rc->file);
        r = policy_load_file(path, &p, &d);
    }
    if (r < 0) {
        policy_diags_print(&d, stderr);
        fail_msg("cannot load %s", rc->file ? rc->file : "the default policy");
    }
    policy_diags_free(&d);
    return p;
}

/* What the kernel does with stacked filters: the most restrictive action wins. */
static uint32_t stacked(uint32_t a, uint32_t b)
{
    return (int32_t)(a & SECCOMP_RET_ACTION_FULL) < (int32_t)(b & SECCOMP_RET_ACTION_FULL) ? a : b;
}

#define EXEC_PTR ((const void *)0x123456789000ull)

static void check_role(const struct sandbox_seccomp *plain_s)
{
    struct sandbox_seccomp notify_s = *plain_s;
    notify_s.notify = true;
    struct seccomp_prog plain, notify;
    struct cerr err = {0};
    if (seccomp_build(plain_s, EXEC_PTR, &plain, &err) < 0 ||
        seccomp_build(&notify_s, EXEC_PTR, &notify, &err) < 0)
        fail_msg("seccomp_build: %s", err.msg);
    assert_true(plain.extra_len > 0);
    assert_int_equal(notify.extra_len, 0); /* one filter: the one with the listener */
    assert_int_equal(notify.len, plain.len + plain.extra_len);

    uint32_t arch = seccomp_arch_native();
    struct seccomp_data cases[N_ROWS + 16];
    size_t n = 0;
    for (size_t k = 0; k < N_ROWS; k++) {
        if (rows[k].nr < 0)
            continue;
        cases[n] = (struct seccomp_data){.nr = (int)rows[k].nr, .arch = arch};
        memcpy(cases[n].args, rows[k].args, sizeof(cases[n].args));
        n++;
    }
    const struct seccomp_data more[] = {
        {.nr = SYS_ioctl, .arch = arch, .args = {0, TIOCSTI}},
        {.nr = SYS_ioctl, .arch = arch, .args = {0, 0xffffffff00000000ull | TIOCSTI}},
        {.nr = SYS_ioctl, .arch = arch, .args = {0, 0x541C /* TIOCLINUX */}},
        {.nr = SYS_ioctl, .arch = arch, .args = {0, TIOCGWINSZ}},
        {.nr = SYS_execve, .arch = arch, .args = {(uint64_t)(uintptr_t)EXEC_PTR}},
        {.nr = SYS_execve, .arch = arch, .args = {(uint64_t)(uintptr_t)EXEC_PTR + 4096}},
        {.nr = SYS_execveat, .arch = arch, .args = {0, (uint64_t)(uintptr_t)EXEC_PTR}},
        {.nr = SYS_mount, .arch = arch},
        {.nr = SYS_clone3, .arch = arch},
        {.nr = SYS_getpid, .arch = AUDIT_ARCH_I386},
        {.nr = 0x40000000 | SYS_getpid, .arch = arch},
        {.nr = 9999, .arch = arch},
    };
    for (size_t i = 0; i < ARRAY_SIZE(more); i++)
        cases[n++] = more[i];

    for (size_t i = 0; i < n; i++) {
        uint32_t two = stacked(bpf_run(plain.extra, plain.extra_len, &cases[i]),
                               bpf_run(plain.insns, plain.len, &cases[i]));
        uint32_t one = bpf_run(notify.insns, notify.len, &cases[i]);
        uint32_t want = two == (SECCOMP_RET_ERRNO | EPERM) ? SECCOMP_RET_USER_NOTIF : two;
        if (one != want)
            fail_msg("nr %d arch 0x%x args %#llx %#llx: two filters 0x%08x, notifying filter 0x%08x",
                     cases[i].nr, cases[i].arch, (unsigned long long)cases[i].args[0],
                     (unsigned long long)cases[i].args[1], two, one);
    }
    seccomp_prog_release(&plain);
    seccomp_prog_release(&notify);
}

static void test_merged_equals_stacked(void **state)
{
    (void)state;
    for (size_t ri = 0; ri < N_ROLES; ri++) {
        struct policy *p = load_case(&roles[ri]);
        struct policy_role_view v;
        struct cerr err = {0};
        assert_int_equal(policy_role_resolve(p, roles[ri].role, &v, &err), 0);
        check_role(&v.sandbox.seccomp);
        check_role(&v.command_sandbox.seccomp);
        policy_free(p);
    }
}

static void test_denial_rules(void **state)
{
    (void)state;
    struct sandbox_profile p;
    sandbox_profile_default(&p);
    const struct sandbox_seccomp *s = &p.seccomp;
    assert_string_equal(sandbox_seccomp_denial_rule(s, AUDIT_ARCH_X86_64, SYS_mount), "always denied");
    assert_string_equal(sandbox_seccomp_denial_rule(s, AUDIT_ARCH_X86_64, SYS_socket),
                        "argument not allowed (socket address family)");
    assert_string_equal(sandbox_seccomp_denial_rule(s, AUDIT_ARCH_X86_64, SYS_ioctl),
                        "argument not allowed (ioctl TIOCSTI or TIOCLINUX)");
    assert_string_equal(sandbox_seccomp_denial_rule(s, AUDIT_ARCH_I386, 21),
                        "a foreign system call ABI");
    assert_string_equal(sandbox_seccomp_denial_rule(s, AUDIT_ARCH_X86_64, 0x40000000 | SYS_getpid),
                        "a foreign system call ABI");
    assert_string_equal(sandbox_seccomp_denial_rule(s, AUDIT_ARCH_X86_64, 9999),
                        "unknown system call number");
    struct sandbox_seccomp narrow = {.groups = SANDBOX_SC_BASIC_IO};
    assert_string_equal(sandbox_seccomp_denial_rule(&narrow, AUDIT_ARCH_X86_64, SYS_uname),
                        "not in the profile's groups");
    assert_string_equal(sandbox_seccomp_denial_rule(&narrow, AUDIT_ARCH_X86_64, SYS_execve),
                        "no exec authority (execve after the program's start)");
    const char *deny[] = {"uname"};
    struct sandbox_seccomp denied = {.groups = SANDBOX_SC_SYSTEM_INFO, .deny = deny, .n_deny = 1};
    assert_string_equal(sandbox_seccomp_denial_rule(&denied, AUDIT_ARCH_X86_64, SYS_uname),
                        "denied by the profile's deny list");
}

static void test_names(void **state)
{
    (void)state;
    char buf[64];
    sandbox_seccomp_syscall_name(AUDIT_ARCH_X86_64, SYS_mount, buf, sizeof(buf));
    assert_string_equal(buf, "mount");
    sandbox_seccomp_syscall_name(AUDIT_ARCH_I386, 21, buf, sizeof(buf));
    assert_string_equal(buf, "mount");
    sandbox_seccomp_syscall_name(AUDIT_ARCH_X86_64, 9999, buf, sizeof(buf));
    assert_string_equal(buf, "unknown");
    assert_string_equal(sandbox_seccomp_arch_name(AUDIT_ARCH_X86_64, SYS_mount, buf, sizeof(buf)),
                        "x86_64");
    assert_string_equal(sandbox_seccomp_arch_name(AUDIT_ARCH_X86_64, 0x40000000 | 165, buf, sizeof(buf)),
                        "x32");
    assert_string_equal(sandbox_seccomp_arch_name(AUDIT_ARCH_I386, 21, buf, sizeof(buf)), "x86");
    assert_string_equal(sandbox_seccomp_arch_name(0x1234, 1, buf, sizeof(buf)), "arch-0x00001234");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_merged_equals_stacked),
        cmocka_unit_test(test_denial_rules),
        cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
