#!/bin/sh
# tests/e2e/policy_commas.sh: a doubled comma (or a comma right after '{' / '[') in a policy
# file is reported at that comma, wherever it stands; a single trailing comma and commas inside
# strings and comments stay accepted.
. "$TOP/tests/lib.sh"

check_at() { # name, file contents, expected FILE:LINE:COL
    printf '%s\n' "$2" >"$T_TMP/p.json"
    run_capture out err rc "$CORRAL" policy check "$T_TMP/p.json"
    expect_status "$1: a problem" 1 "$rc" "$err"
    expect_match "$1: reported at the comma ($3)" "p.json:$3: syntax error: a ',' with no value before it" "$err"
}

check_at "doubled comma before the object's end" '{
  "version": 1,
  "roles": {
    "worker": { "budgets": { "memory": "256M" } },,
  }
}' "4:51"
check_at "doubled comma before another member" '{
  "version": 1,
  "roles": {
    "worker": { "budgets": { "memory": "256M" } },,
    "observer": {}
  }
}' "4:51"
check_at "doubled comma at the top level's end" '{
  "version": 1,,
}' "2:16"
check_at "doubled comma with a comment between" '{
  "version": 1, /* a note */ ,
  "description": "x"
}' "2:30"
check_at "comma right after an opening brace" '{ ,"version": 1 }' "1:3"
check_at "doubled comma in an array" '{ "version": 1, "roles": { "worker": { "remove": ["a",, "b"] } } }' "1:55"

printf '%s\n' '{
  "version": 1, // a trailing comma, and commas in text: ,, {, [,
  "description": "a,,b {, [,",
  "roles": { "worker": { "budgets": { "memory": "256M", }, }, },
}' >"$T_TMP/ok.json"
run_capture out err rc "$CORRAL" policy check "$T_TMP/ok.json"
expect_status "single trailing commas and commas in strings and comments pass" 0 "$rc" "$err"
