/* tests/unit/test_policy_seccomp.c: the seccomp filter derived from each example role, checked
 * in simulation: the raw BPF written by sandbox_seccomp_export is run by a small classic-BPF
 * interpreter over struct seccomp_data for every row of policy_tables.h. */
#include "policy/policy.h"
#include "tests/unit/policy_tables.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

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

/* The program of a role: the filter's raw BPF as sandbox_seccomp_export writes it. */
static struct sock_filter *export_role(const struct policy_role_view *v, size_t *n)
{
    int fd = memfd_create("bpf", MFD_CLOEXEC);
    assert_true(fd >= 0);
    struct cerr err = {0};
    int r = sandbox_seccomp_export(&v->sandbox.seccomp, fd, &err);
    if (r < 0)
        fail_msg("export: %s", err.msg);
    off_t size = lseek(fd, 0, SEEK_END);
    assert_true(size > 0 && size % (off_t)sizeof(struct sock_filter) == 0);
    struct sock_filter *prog = malloc((size_t)size);
    assert_non_null(prog);
    assert_int_equal(pread(fd, prog, (size_t)size, 0), size);
    close(fd);
    *n = (size_t)size / sizeof(struct sock_filter);
    return prog;
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

static void test_tables_in_simulation(void **state)
{
    (void)state;
    uint32_t arch = seccomp_arch_native();
    for (size_t ri = 0; ri < N_ROLES; ri++) {
        struct policy *p = load_case(&roles[ri]);
        struct policy_role_view v;
        struct cerr err = {0};
        assert_int_equal(policy_role_resolve(p, roles[ri].role, &v, &err), 0);
        size_t n;
        struct sock_filter *prog = export_role(&v, &n);
        for (size_t k = 0; k < N_ROWS; k++) {
            if (rows[k].nr < 0)
                continue;
            struct seccomp_data d = {
                .nr = (int)rows[k].nr, .arch = arch, .instruction_pointer = 0x400000};
            memcpy(d.args, rows[k].args, sizeof(d.args));
            uint32_t ret = bpf_run(prog, n, &d);
            char want = rows[k].want[ri];
            bool allowed = ret == SECCOMP_RET_ALLOW;
            bool eperm = ret == (SECCOMP_RET_ERRNO | EPERM);
            if ((want == A && !allowed) || (want == D && !eperm))
                fail_msg("role %s (%s): %s: want %s, filter returned 0x%08x", roles[ri].role,
                         roles[ri].file ? roles[ri].file : "default", rows[k].probe,
                         want == A ? "allow" : "EPERM", ret);
        }
        /* Another architecture's syscall is refused, whatever the number. */
        struct seccomp_data foreign = {.nr = SYS_getpid, .arch = 0x40000003 /* i386 */};
        assert_int_equal(bpf_run(prog, n, &foreign), SECCOMP_RET_ERRNO | EPERM);
        /* x32 syscall numbers are refused too. */
        struct seccomp_data x32 = {.nr = 0x40000000 | SYS_getpid, .arch = arch};
        assert_int_not_equal(bpf_run(prog, n, &x32), SECCOMP_RET_ALLOW);
        free(prog);
        policy_free(p);
    }
}

/* The interpreter itself, on a hand-written program: a test of the test. */
static void test_interpreter(void **state)
{
    (void)state;
    struct sock_filter prog[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 39, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
        BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0xff),
        BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 0x10, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 1),
        BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x20, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 2),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
    };
    size_t n = sizeof(prog) / sizeof(prog[0]);
    struct seccomp_data d = {.nr = 39};
    assert_int_equal(bpf_run(prog, n, &d), SECCOMP_RET_ALLOW);
    d = (struct seccomp_data){.nr = 1, .args = {0x110}};
    assert_int_equal(bpf_run(prog, n, &d), SECCOMP_RET_ERRNO | 1);
    d = (struct seccomp_data){.nr = 1, .args = {0x1}};
    assert_int_equal(bpf_run(prog, n, &d), SECCOMP_RET_ERRNO | 2);
    d = (struct seccomp_data){.nr = 1, .args = {0x21}};
    assert_int_equal(bpf_run(prog, n, &d), SECCOMP_RET_KILL_PROCESS);
}

/* Narrowing by authority shows in the groups, whatever the file asked for. */
static void test_narrowing(void **state)
{
    (void)state;
    static const char text[] =
        "{ \"roles\": {"
        "  \"r\": { \"extends\": \"worker\", \"authority\": {\"commands\": false} },"
        "  \"c\": { \"extends\": \"worker\", \"authority\": {\"commands\": true, \"network\": true} },"
        "  \"o\": { \"extends\": \"observer\" } } }";
    struct policy *p = NULL;
    struct policy_diags d = {0};
    assert_int_equal(policy_load_buffer("t", text, strlen(text), &p, &d), 0);
    struct policy_role_view v;
    struct cerr err;
    assert_int_equal(policy_role_resolve(p, "r", &v, &err), 0);
    assert_false(v.sandbox.seccomp.groups & SANDBOX_SC_EXEC);
    assert_true(v.sandbox.seccomp.groups & SANDBOX_SC_FILE_WRITE);
    assert_false(v.sandbox.seccomp.network);
    assert_false(v.may_exec);
    assert_int_equal(policy_role_resolve(p, "c", &v, &err), 0);
    assert_true(v.sandbox.seccomp.groups & SANDBOX_SC_EXEC);
    assert_true(v.sandbox.seccomp.network);
    assert_true(v.may_exec);
    assert_int_equal(policy_role_resolve(p, "o", &v, &err), 0);
    assert_false(v.sandbox.seccomp.groups & SANDBOX_SC_FILE_WRITE);
    assert_false(v.sandbox.seccomp.groups & SANDBOX_SC_EXEC);
    assert_false(v.authority.write);
    policy_free(p);
    policy_diags_free(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_interpreter),
        cmocka_unit_test(test_narrowing),
        cmocka_unit_test(test_tables_in_simulation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
