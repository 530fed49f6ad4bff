/* tests/unit/test_egress.c: the egress rule matcher as tables (rule lists, request -> verdict and
 * the rule that decided), the private-address classifier, and the request parsers (HTTP head,
 * SOCKS5, DNS) on good, partial and hostile input. */
#include "common/util.h"
#include "policy/egress.h"
#include "supervisor/egress/internal.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

static void parse_list(const char *const *texts, struct egress_rule *out, size_t *n)
{
    *n = 0;
    for (size_t i = 0; texts[i]; i++) {
        char why[128];
        if (egress_rule_parse(texts[i], &out[*n], why, sizeof(why)) < 0)
            fail_msg("rule '%s' refused: %s", texts[i], why);
        (*n)++;
    }
}

static void rules_parse_good_and_bad(void **state)
{
    static const char *const good[] = {"example.com",      "example.com:8443", "*.example.com",
                                       "*.example.com:22", "10.0.0.0/8",       "10.1.2.3:5432",
                                       "[::1]:8080",       "fd00::/8",         "::1",
                                       "API.Example.COM."};
    for (size_t i = 0; i < ARRAY_SIZE(good); i++) {
        struct egress_rule r;
        char why[128];
        assert_int_equal(egress_rule_parse(good[i], &r, why, sizeof(why)), 0);
    }
    static const char *const bad[] = {"",
                                      "exa mple.com",
                                      "example.com:0",
                                      "example.com:65536",
                                      "example.com:http",
                                      "a*.example.com",
                                      "*example.com",
                                      "10.0.0.0/33",
                                      "10.0.0.0/",
                                      "[::1",
                                      "[::1]x",
                                      "..",
                                      "under_score.com",
                                      "fd00::/129",
                                      "example.com:-1"};
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        struct egress_rule r;
        char why[128] = "";
        if (egress_rule_parse(bad[i], &r, why, sizeof(why)) == 0)
            fail_msg("rule '%s' accepted", bad[i]);
        assert_true(why[0] != '\0');
    }
    struct egress_rule r;
    assert_int_equal(egress_rule_parse("10.1.2.3/8", &r, NULL, 0), 0);
    assert_int_equal(r.addr[1], 0); /* host bits cleared */
    assert_int_equal(egress_rule_parse("API.Example.COM.", &r, NULL, 0), 0);
    assert_string_equal(r.host, "api.example.com");
}

struct row {
    const char *host;
    uint16_t port;
    enum egress_verdict want;
    const char *rule; /* the rule text that decided, or NULL */
};

static void check_rows(const struct egress_policy *p, const struct row *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct egress_decision d = {0};
        egress_decide_name(p, rows[i].host, rows[i].port, &d);
        if (d.verdict != rows[i].want)
            fail_msg("%s:%u: got %s, want %s", rows[i].host, rows[i].port,
                     egress_verdict_name(d.verdict), egress_verdict_name(rows[i].want));
        if (rows[i].rule) {
            if (!d.rule || strcmp(d.rule->text, rows[i].rule))
                fail_msg("%s:%u: decided by '%s', want '%s'", rows[i].host, rows[i].port,
                         d.rule ? d.rule->text : "(none)", rows[i].rule);
        } else if (d.rule) {
            fail_msg("%s:%u: decided by '%s', want no rule", rows[i].host, rows[i].port, d.rule->text);
        }
    }
}

static void names_wildcards_ports_and_deny(void **state)
{
    static const char *const allow[] = {"api.example.com",
                                        "*.pkg.example.org",
                                        "git.example.net:22",
                                        "203.0.113.7:8080",
                                        "10.0.0.0/8:5432",
                                        "*.both.test",
                                        NULL};
    static const char *const deny[] = {"bad.pkg.example.org", "*.both.test:443", "10.9.0.0/16:*", NULL};
    struct egress_rule a[16], dn[16];
    struct egress_policy p = {0};
    parse_list(allow, a, &p.n_allow);
    parse_list(deny, dn, &p.n_deny);
    p.allow = a;
    p.deny = dn;
    const struct row rows[] = {
        {"api.example.com", 443, EGRESS_ALLOW, "api.example.com"},
        {"api.example.com", 80, EGRESS_ALLOW, "api.example.com"},
        {"api.example.com", 8443, EGRESS_DENY_UNLISTED, NULL}, /* no port: 80 and 443 only */
        {"example.com", 443, EGRESS_DENY_UNLISTED, NULL},
        {"x.api.example.com", 443, EGRESS_DENY_UNLISTED, NULL},
        {"a.pkg.example.org", 443, EGRESS_ALLOW, "*.pkg.example.org"},
        {"a.b.pkg.example.org", 80, EGRESS_ALLOW, "*.pkg.example.org"},
        {"pkg.example.org", 443, EGRESS_DENY_UNLISTED, NULL}, /* not the bare parent */
        {"xpkg.example.org", 443, EGRESS_DENY_UNLISTED, NULL},
        {"bad.pkg.example.org", 443, EGRESS_DENY_RULE, "bad.pkg.example.org"}, /* deny wins */
        {"git.example.net", 22, EGRESS_ALLOW, "git.example.net:22"},
        {"git.example.net", 443, EGRESS_DENY_UNLISTED, NULL},
        {"203.0.113.7", 8080, EGRESS_ALLOW, "203.0.113.7:8080"},
        {"203.0.113.8", 8080, EGRESS_DENY_UNLISTED, NULL}, /* an unlisted literal */
        {"10.1.2.3", 5432, EGRESS_ALLOW, "10.0.0.0/8:5432"},
        {"10.9.1.1", 5432, EGRESS_DENY_RULE, "10.9.0.0/16:*"},
        {"a.both.test", 80, EGRESS_ALLOW, "*.both.test"},
        {"a.both.test", 443, EGRESS_DENY_RULE, "*.both.test:443"},
        {"1.2.3.4", 443, EGRESS_DENY_UNLISTED, NULL},
        {"::1", 443, EGRESS_DENY_UNLISTED, NULL},
        {"10.9.1.1", 443, EGRESS_DENY_RULE, "10.9.0.0/16:*"},
    };
    check_rows(&p, rows, ARRAY_SIZE(rows));
}

static void private_addresses_after_lookup(void **state)
{
    static const char *const allow[] = {"*.corp.test", "db.corp.test:5432", "10.1.0.0/16:5432", NULL};
    static const char *const deny[] = {"192.0.2.0/24", NULL};
    struct egress_rule a[8], dn[8];
    struct egress_policy p = {0};
    parse_list(allow, a, &p.n_allow);
    parse_list(deny, dn, &p.n_deny);
    p.allow = a;
    p.deny = dn;
    struct {
        const char *addr;
        uint16_t port;
        bool private_ok;
        enum egress_verdict want;
    } rows[] = {
        {"93.184.216.34", 443, false, EGRESS_ALLOW},
        {"127.0.0.1", 443, false, EGRESS_DENY_PRIVATE},
        {"169.254.169.254", 80, false, EGRESS_DENY_PRIVATE}, /* cloud metadata */
        {"fd00:ec2::254", 80, false, EGRESS_DENY_PRIVATE},
        {"::ffff:10.0.0.1", 443, false, EGRESS_DENY_PRIVATE},
        {"100.64.1.1", 443, false, EGRESS_DENY_PRIVATE},
        {"10.1.2.3", 5432, false, EGRESS_ALLOW}, /* a rule names the range */
        {"10.2.2.3", 5432, false, EGRESS_DENY_PRIVATE},
        {"127.0.0.1", 443, true, EGRESS_ALLOW},
        {"192.0.2.5", 443, true, EGRESS_DENY_RULE}, /* deny beats private: true */
    };
    for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
        int fam;
        uint8_t ad[16];
        assert_true(egress_addr_parse(rows[i].addr, &fam, ad));
        p.private_ok = rows[i].private_ok;
        struct egress_decision d = {0};
        egress_decide_name(&p, rows[i].port == 5432 ? "db.corp.test" : "www.corp.test", rows[i].port,
                           &d);
        assert_int_equal(d.verdict, EGRESS_ALLOW);
        egress_decide_addr(&p, fam, ad, rows[i].port, &d);
        if (d.verdict != rows[i].want)
            fail_msg("%s: got %s", rows[i].addr, egress_verdict_name(d.verdict));
    }
    static const char *const priv[] = {
        "0.1.2.3",   "10.0.0.1",    "172.16.0.1", "172.31.255.255",  "192.168.1.1",
        "127.1.2.3", "169.254.0.1", "224.0.0.1",  "255.255.255.255", "::",
        "::1",       "fe80::1",     "fc00::1",    "64:ff9b::a00:1",  "ff02::1"};
    static const char *const pub[] = {"8.8.8.8", "172.32.0.1", "100.128.0.1", "2606:4700::1111",
                                      "64:ff9b::808:808"};
    for (size_t i = 0; i < ARRAY_SIZE(priv); i++) {
        int fam;
        uint8_t ad[16];
        assert_true(egress_addr_parse(priv[i], &fam, ad));
        if (!egress_addr_private(fam, ad))
            fail_msg("%s not private", priv[i]);
    }
    for (size_t i = 0; i < ARRAY_SIZE(pub); i++) {
        int fam;
        uint8_t ad[16];
        assert_true(egress_addr_parse(pub[i], &fam, ad));
        if (egress_addr_private(fam, ad))
            fail_msg("%s private", pub[i]);
    }
}

static void ports_for_capture(void **state)
{
    static const char *const allow[] = {"a.test", "b.test:8080", "c.test:443", "10.0.0.0/8:22", NULL};
    struct egress_rule a[8];
    struct egress_policy p = {0};
    parse_list(allow, a, &p.n_allow);
    p.allow = a;
    uint16_t ports[8];
    size_t n = egress_ports(&p, ports, 8);
    assert_int_equal(n, 4);
    assert_int_equal(ports[0], 22);
    assert_int_equal(ports[1], 80);
    assert_int_equal(ports[2], 443);
    assert_int_equal(ports[3], 8080);
}

static struct egress_http_req req;

static void http_heads(void **state)
{
    const char *c = "CONNECT Api.Example.com:443 HTTP/1.1\r\nHost: api.example.com:443\r\n\r\n";
    assert_int_equal(egress_http_parse(c, strlen(c), &req), (ssize_t)strlen(c));
    assert_true(req.connect);
    assert_string_equal(req.host, "api.example.com");
    assert_int_equal(req.port, 443);
    assert_int_equal(egress_http_parse(c, strlen(c) - 1, &req), 0); /* need more */

    const char *g = "GET http://h.test:8080/a/b?x=1 HTTP/1.1\r\nHost: h.test\r\n\r\n";
    assert_int_equal(egress_http_parse(g, strlen(g), &req), (ssize_t)strlen(g));
    assert_false(req.connect);
    assert_string_equal(req.host, "h.test");
    assert_int_equal(req.port, 8080);
    assert_int_equal(req.line_len, strlen("GET /a/b?x=1 HTTP/1.1\r\n"));
    assert_memory_equal(req.line, "GET /a/b?x=1 HTTP/1.1\r\n", req.line_len);

    const char *g2 = "GET http://h.test HTTP/1.0\r\n\r\n";
    assert_true(egress_http_parse(g2, strlen(g2), &req) > 0);
    assert_int_equal(req.port, 80);
    assert_memory_equal(req.line, "GET / HTTP/1.0\r\n", req.line_len);

    const char *v6 = "CONNECT [::1]:8443 HTTP/1.1\r\n\r\n";
    assert_true(egress_http_parse(v6, strlen(v6), &req) > 0);
    assert_string_equal(req.host, "::1");

    static const struct {
        const char *in;
        ssize_t want;
    } bad[] = {
        {"GET /local HTTP/1.1\r\n\r\n", -ENOTSUP},
        {"GET https://h.test/ HTTP/1.1\r\n\r\n", -ENOTSUP},
        {"CONNECT h.test HTTP/1.1\r\n\r\n", -EINVAL}, /* CONNECT needs a port */
        {"CONNECT h.test:99999 HTTP/1.1\r\n\r\n", -EINVAL},
        {"CONNECT h.test:443 HTTP/2.0\r\n\r\n", -EINVAL},
        {"GET http://user@h.test/ HTTP/1.1\r\n\r\n", -EINVAL}, /* userinfo */
        {"GET http://h test/ HTTP/1.1\r\n\r\n", -EINVAL},
        {"G(T http://h.test/ HTTP/1.1\r\n\r\n", -EINVAL},
        {"CONNECT [zz]:443 HTTP/1.1\r\n\r\n", -EINVAL},
        {"\r\n\r\n", -EINVAL},
    };
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        ssize_t r = egress_http_parse(bad[i].in, strlen(bad[i].in), &req);
        if (r != bad[i].want)
            fail_msg("'%s': got %zd, want %zd", bad[i].in, r, bad[i].want);
    }
    /* A head that never ends: refused at the bound, not buffered further. */
    static char big[EGRESS_HTTP_HEAD_MAX + 10];
    memset(big, 'a', sizeof(big));
    assert_int_equal(egress_http_parse(big, sizeof(big), &req), -E2BIG);
}

static void socks_messages(void **state)
{
    bool na;
    const uint8_t g[] = {5, 2, 2, 0};
    assert_int_equal(egress_socks_greeting(g, 4, &na), 4);
    assert_true(na);
    assert_int_equal(egress_socks_greeting(g, 3, &na), 0);
    const uint8_t g2[] = {5, 1, 2};
    assert_int_equal(egress_socks_greeting(g2, 3, &na), 3);
    assert_false(na);
    const uint8_t g4[] = {4, 1, 0};
    assert_true(egress_socks_greeting(g4, 3, &na) < 0);

    struct egress_socks_req q;
    const uint8_t dom[] = {5, 1, 0, 3, 6, 'H', '.', 't', 'e', 's', 't', 0x01, 0xbb};
    assert_int_equal(egress_socks_request(dom, sizeof(dom), &q), (ssize_t)sizeof(dom));
    assert_string_equal(q.host, "h.test");
    assert_int_equal(q.port, 443);
    assert_int_equal(egress_socks_request(dom, sizeof(dom) - 1, &q), 0);
    const uint8_t v4[] = {5, 1, 0, 1, 127, 0, 0, 1, 0, 80};
    assert_int_equal(egress_socks_request(v4, sizeof(v4), &q), 10);
    assert_string_equal(q.host, "127.0.0.1");
    const uint8_t badname[] = {5, 1, 0, 3, 3, 'a', ' ', 'b', 0, 80};
    assert_true(egress_socks_request(badname, sizeof(badname), &q) < 0);
    const uint8_t atyp[] = {5, 1, 0, 9, 0, 0, 0, 0, 0, 0};
    assert_int_equal(egress_socks_request(atyp, sizeof(atyp), &q), -EPROTONOSUPPORT);
    const uint8_t port0[] = {5, 1, 0, 1, 1, 2, 3, 4, 0, 0};
    assert_true(egress_socks_request(port0, sizeof(port0), &q) < 0);
}

static void dns_queries(void **state)
{
    /* id 0x1234, RD, one question: a.test A IN */
    const uint8_t qa[] = {0x12, 0x34, 0x01, 0x00, 0,   1,   0,   0, 0, 0, 0, 0,
                          1,    'A',  4,    't',  'e', 's', 't', 0, 0, 1, 0, 1};
    struct egress_dns_query q;
    assert_int_equal(egress_dns_parse(qa, sizeof(qa), &q), 0);
    assert_string_equal(q.name, "a.test");
    assert_int_equal(q.qtype, 1);
    uint8_t ans[EGRESS_DNS_MAX];
    const uint8_t fake[4] = {127, 128, 0, 1};
    size_t n = egress_dns_answer(qa, &q, fake, 0, ans);
    assert_int_equal(n, sizeof(qa) + 16);
    assert_int_equal(ans[0], 0x12);
    assert_int_equal(ans[2] & 0x80, 0x80); /* a response */
    assert_int_equal(ans[7], 1);           /* one answer */
    assert_memory_equal(ans + n - 4, fake, 4);

    uint8_t resp[sizeof(qa)];
    memcpy(resp, qa, sizeof(qa));
    resp[2] |= 0x80;
    assert_int_equal(egress_dns_parse(resp, sizeof(resp), &q), -EINVAL); /* no reflection */
    uint8_t ptr[sizeof(qa)];
    memcpy(ptr, qa, sizeof(qa));
    ptr[12] = 0xc0; /* a compression pointer in the question */
    assert_int_equal(egress_dns_parse(ptr, sizeof(ptr), &q), -EINVAL);
    assert_int_equal(egress_dns_parse(qa, sizeof(qa) - 1, &q), -EINVAL);
    uint8_t two[sizeof(qa)];
    memcpy(two, qa, sizeof(qa));
    two[5] = 2;
    assert_int_equal(egress_dns_parse(two, sizeof(two), &q), -ENOTSUP);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rules_parse_good_and_bad),
        cmocka_unit_test(names_wildcards_ports_and_deny),
        cmocka_unit_test(private_addresses_after_lookup),
        cmocka_unit_test(ports_for_capture),
        cmocka_unit_test(http_heads),
        cmocka_unit_test(socks_messages),
        cmocka_unit_test(dns_queries),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
