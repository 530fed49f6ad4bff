#!/bin/sh
# tests/e2e/surface_voltagent_search.sh: the VoltAgent surface's search and skills toolkits through
# the real pipe (a policy role with "surface": "voltagent"): indexing files and raw content,
# ranking with known answers in bm25, vector and hybrid modes, the external embedding command of
# the policy, skills discovery, activation per session, allowlisted reads (refusals recorded as
# denials), approval and disabled tools, and the errors.
. "$TOP/tests/lib.sh"
INIT='{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}'
pol=$T_TMP/volt.json
cat >"$pol" <<'EOF'
{
  "version": 1,
  "roles": {
    "worker": {
      "surface": "voltagent",
      "tools": { "needs_approval": [ "workspace_activate_skill" ] }
    },
    "lean": {
      "extends": "worker",
      "tools": { "needs_approval": [], "disabled": [ "workspace_index_content" ] }
    },
    "embedder": {
      "extends": "worker",
      "tools": {
        "needs_approval": [],
        "embedding_command": "awk -v RS='\",\"' '{ r = gsub(/red/, \"&\"); b = gsub(/blue/, \"&\"); printf \"%s[%d,%d,1]\", (NR > 1 ? \",\" : \"[\"), r, b } END { print \"]\" }'"
      },
      "sandbox": { "user": 65534, "group": 65534 }
    }
  }
}
EOF
ws=$T_TMP/ws
out_dir=$T_TMP/outside
mkdir -p "$ws/docs" "$ws/src" "$ws/skills/pdf/references" "$ws/skills/pdf/scripts" "$ws/skills/web" "$out_dir"
printf 'Cats are small carnivorous mammals.\nThe domestic cat purrs and hunts mice.\n' >"$ws/docs/cats.md"
printf 'Dogs are loyal companions.\nA dog barks, fetches sticks and guards the house.\n' >"$ws/docs/dogs.md"
printf 'Rust is a systems programming language\nfocused on memory safety and ownership.\n' >"$ws/docs/rust.md"
printf 'Python is a dynamic programming language\npopular for scripting and data science.\n' >"$ws/docs/python.md"
printf 'export function buildIndex(files) {\n  // indexing the files for search\n}\n' >"$ws/src/index.ts"
cat >"$ws/skills/pdf/SKILL.md" <<'EOF'
---
name: PDF Tools
description: Extract text and tables from PDF files
version: "1.2"
tags: [pdf, documents]
references:
  - references/forms.md
scripts: [scripts/extract.py]
---
# PDF

Run scripts/extract.py on a PDF to pull its text out.
EOF
printf 'How to fill PDF forms.\n' >"$ws/skills/pdf/references/forms.md"
printf "print('extract')\n" >"$ws/skills/pdf/scripts/extract.py"
printf 'not listed\n' >"$ws/skills/pdf/secret.txt"
printf -- '---\nname: Web Scraper\ndescription: Fetch and parse HTML pages\n---\nSee [the guide](references/guide.md).\n' >"$ws/skills/web/SKILL.md"
echo "SECRET-OUTSIDE" >"$out_dir/secret.txt"
ln -s "$out_dir/secret.txt" "$ws/skills/pdf/references/leak.md"
chown -R 65534:65534 "$ws"
db=$T_TMP/trail.db
call() { printf '{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"%s","arguments":%s}}' "$1" "$2" "$3"; }
talk() { # role, steps...
    r=$1; shift
    "$CORRAL" exec --timeout 60 --trail "$db" --policy "$pol" --role "$r" --workspace "$ws" -- "$AGENTS/rpc_script" "$INIT" "$@" 2>&1 >/dev/null
}

# ---- search -----------------------------------------------------------------------------------
out=$(talk worker \
  '{"jsonrpc":"2.0","id":1,"method":"tools/list"}' \
  "$(call 2 workspace_index '{"path":"/docs","glob":"*.md"}')" \
  "$(call 3 workspace_search '{"query":"memory safety","mode":"bm25"}')" \
  "$(call 4 workspace_search '{"query":"barking doggies","mode":"vector"}')" \
  "$(call 5 workspace_search '{"query":"cat purring","mode":"hybrid","top_k":1}')" \
  "$(call 6 workspace_index_content '{"path":"notes/zebra.txt","content":"zebra stripes","metadata":{"source":"agent"}}')" \
  "$(call 7 workspace_search '{"query":"zebra","mode":"bm25","include_content":false}')" \
  "$(call 8 workspace_search '{"query":"indexes","mode":"vector","path":"/docs"}')" \
  "$(call 9 workspace_index '{}')" \
  "$(call 10 workspace_search '{"query":"indexes","mode":"vector","top_k":1}')" \
  "$(call 11 workspace_search '{"query":"language","mode":"bm25","path":"/docs","glob":"p*.md"}')" \
  "$(call 12 workspace_search '{"query":"x","mode":"fuzzy"}')" \
  "$(call 13 workspace_search '{"query":"x","path":"/../etc"}')" \
  "$(call 14 workspace_index '{"path":"~/x"}')" \
  "$(call 15 workspace_index '{"path":"docs"}')" \
  "$(call 16 workspace_search '{"query":"x","glob":"[a"}')" \
  "$(call 17 workspace_index '{"path":"/nope"}')" \
  "$(call 18 workspace_search '{"query":"submarine","mode":"bm25"}')" \
  "$(call 19 workspace_search '{"querry":"x"}')" \
)
line() { printf '%s\n' "$out" | grep -F "< id=$1 " | head -1; }
expect_match "tools/list: the search and skills toolkits after the filesystem's" 'tools=.*grep,workspace_index,workspace_index_content,workspace_search,workspace_list_skills,workspace_search_skills,workspace_read_skill,workspace_activate_skill,workspace_deactivate_skill,workspace_read_skill_reference,workspace_read_skill_script,workspace_read_skill_asset' "$(line 1)"
expect_match "workspace_index: upstream's summary" 'isError=false sc=\{"output":"Indexed 4 file\(s\).\\nSkipped 0 file\(s\).\\nVector indexed 4 file\(s\).","indexed":4,"skipped":0,"vector_indexed":4,"errors":\[\]' "$(line 2)"
expect_match "bm25: the known answer first" 'isError=false sc=\{"results":\[\{"id":"/docs/rust.md","path":"/docs/rust.md","score":1,' "$(line 3)"
expect_match "bm25: lineRange and snippet" '"lineRange":\{"start":2,"end":2\}.*"snippet":"Rust is a systems programming language focused on memory safety and ownership."' "$(line 3)"
expect_match "vector: the known answer first (no shared word)" 'isError=false sc=\{"results":\[\{"id":"/docs/dogs.md"' "$(line 4)"
expect_match "hybrid: the known answer first, top_k 1" 'isError=false sc=\{"results":\[\{"id":"/docs/cats.md",[^]]*\],"total":1,"mode":"hybrid"' "$(line 5)"
expect_match "hybrid: both scores in scoreDetails" '"scoreDetails":\{"bm25":[0-9.]+,"vector":[0-9.]+\}' "$(line 5)"
expect_match "workspace_index_content" 'isError=false sc=\{"output":"Indexed 1 file\(s\).\\nSkipped 0 file\(s\).\\nVector indexed 1 file\(s\)."' "$(line 6)"
expect_match "indexed content is found under its path, with its metadata, content left out" '"id":"/notes/zebra.txt",.*"content":"",.*"metadata":\{"source":"agent"\}' "$(line 7)"
expect_nomatch "a path filter keeps other documents out" 'src/index.ts' "$(line 8)"
expect_match "workspace_index with upstream's defaults (/ and **/*)" '"output":"Indexed [0-9]+ file\(s\)' "$(line 9)"
expect_match "vector: the file about indexing answers 'indexes'" '"results":\[\{"id":"/src/index.ts"' "$(line 10)"
expect_match "path + glob filter" '"results":\[\{"id":"/docs/python.md".*"total":1' "$(line 11)"
expect_match "a bad mode" 'isError=true sc=\{"error":"Error: mode must be one of \\"bm25\\", \\"vector\\", \\"hybrid\\"","code":"invalid_argument"' "$(line 12)"
expect_match "'..' in a path" '"code":"path_traversal"' "$(line 13)"
expect_match "'~' in a path" '"code":"path_traversal"' "$(line 14)"
expect_match "a path without '/'" "isError=true sc=\\{\"error\":\"Error: path must be a workspace path starting with '/'\"" "$(line 15)"
expect_match "a bad glob" '"code":"invalid_pattern"' "$(line 16)"
expect_match "a missing base path" '"code":"not_found"' "$(line 17)"
expect_match "no hit: an empty result" 'isError=false sc=\{"results":\[\],"total":0' "$(line 18)"
expect_match "an unknown argument" 'isError=true sc=\{"error":"Error: workspace_search takes no argument \\"querry\\""' "$(line 19)"
expect_nomatch "no host path in any answer" "$T_TMP" "$out"

# ---- skills -----------------------------------------------------------------------------------
out=$(talk worker \
  "$(call 1 workspace_list_skills '{}')" \
  "$(call 2 workspace_read_skill '{"skill_id":"pdf tools"}')" \
  "$(call 3 workspace_activate_skill '{"skill_id":"PDF Tools"}')" \
  "$(call 4 workspace_deactivate_skill '{"skill_id":"PDF Tools"}')" \
  "$(call 5 workspace_read_skill_reference '{"skill_id":"/skills/pdf","reference":"forms.md"}')" \
  "$(call 6 workspace_read_skill_script '{"skill_id":"/skills/pdf","script":"scripts/extract.py"}')" \
  "$(call 7 workspace_read_skill_reference '{"skill_id":"/skills/pdf","reference":"secret.txt"}')" \
  "$(call 8 workspace_read_skill_asset '{"skill_id":"/skills/pdf","asset":"../../docs/cats.md"}')" \
  "$(call 9 workspace_search_skills '{"query":"pdf tables","mode":"bm25"}')" \
  "$(call 10 workspace_search_skills '{"query":"scraping webpages","mode":"vector","top_k":1}')" \
  "$(call 11 workspace_read_skill '{"skill_id":"nope"}')" \
  "$(call 12 workspace_read_skill_reference '{"skill_id":"Web Scraper","reference":"references/guide.md"}')" \
)
expect_match "workspace_list_skills: upstream's lines" 'isError=false sc=\{"output":"\[inactive\] /skills/pdf \(PDF Tools\) - Extract text and tables from PDF files\\n\[inactive\] /skills/web \(Web Scraper\) - Fetch and parse HTML pages"' "$(line 1)"
expect_match "workspace_read_skill: upstream's detail" 'isError=false sc=\{"output":"Name: PDF Tools\\nId: /skills/pdf\\nDescription: Extract text and tables from PDF files\\nVersion: 1.2\\nTags: pdf, documents\\nPath: /skills/pdf/SKILL.md\\n\\nInstructions:\\n# PDF' "$(line 2)"
expect_match "needs_approval: activation refused until an admin can approve" 'isError=true sc=\{"error":"Error: workspace_activate_skill needs a person.s approval.*","code":"approval_required"' "$(line 3)"
expect_match "deactivating an inactive skill: upstream's not found" 'isError=true sc=\{"error":"Skill not found: PDF Tools","code":"not_found"' "$(line 4)"
expect_match "a listed reference, by the tail of its entry" 'isError=false sc=\{"output":"How to fill PDF forms.\\n","path":"/skills/pdf/references/forms.md"' "$(line 5)"
expect_match "a listed script" "isError=false sc=\\{\"output\":\"print\\('extract'\\)" "$(line 6)"
expect_match "a file the front matter does not list" 'isError=true sc=\{"error":"File not allowed for reference. Available: references/forms.md","code":"skill_file_not_allowed"' "$(line 7)"
expect_match "'..' in a skill file path" '"code":"skill_file_not_allowed"' "$(line 8)"
expect_match "workspace_search_skills: upstream's text" 'isError=false sc=\{"output":"Found 1 result\(s\):\\n1. PDF Tools \(/skills/pdf\) \(score=[0-9.]+, bm25=[0-9.]+\)' "$(line 9)"
expect_match "workspace_search_skills: vector known answer" '"output":"Found 1 result\(s\):\\n1. Web Scraper \(/skills/web\)' "$(line 10)"
expect_match "an unknown skill" 'isError=true sc=\{"error":"Skill not found: nope","code":"not_found"' "$(line 11)"
expect_match "a reference inferred from the instructions' links, missing on disk" 'isError=true sc=\{"error":"Error reading skill file: ' "$(line 12)"
expect_nomatch "no secret from outside" 'SECRET-OUTSIDE' "$out"

# ---- activation is per session, a symlinked reference stays inside --------------------------
sed -i 's|  - references/forms.md|  - references/forms.md\n  - references/leak.md|' "$ws/skills/pdf/SKILL.md"
out=$(talk lean \
  '{"jsonrpc":"2.0","id":1,"method":"tools/list"}' \
  "$(call 2 workspace_activate_skill '{"skill_id":"Web Scraper"}')" \
  "$(call 3 workspace_list_skills '{"active_only":true}')" \
  "$(call 4 workspace_read_skill_reference '{"skill_id":"/skills/pdf","reference":"leak.md"}')" \
  "$(call 5 workspace_index_content '{"path":"/x","content":"y","metadata":null}')" \
  "$(call 6 workspace_deactivate_skill '{"skill_id":"/skills/web"}')" \
  "$(call 7 workspace_list_skills '{"active_only":true}')" \
)
expect_nomatch "a disabled tool is not listed" 'workspace_index_content' "$(line 1)"
expect_match "workspace_activate_skill" 'isError=false sc=\{"output":"Activated skill: Web Scraper \(/skills/web\)"' "$(line 2)"
expect_match "the active skill is listed active" 'isError=false sc=\{"output":"\[active\] /skills/web \(Web Scraper\) - Fetch and parse HTML pages"' "$(line 3)"
expect_match "a listed reference that is a symlink out of the workspace is refused" 'isError=true sc=\{"error":"Error reading skill file: .*","code":"denied"' "$(line 4)"
expect_match "a disabled tool is refused" 'isError=true|error=' "$(line 5)"
expect_match "workspace_deactivate_skill" 'isError=false sc=\{"output":"Deactivated skill: /skills/web"' "$(line 6)"
expect_match "nothing active after deactivation" '"output":"No skills found."' "$(line 7)"
expect_nomatch "no secret from outside" 'SECRET-OUTSIDE' "$out"
out=$(talk lean "$(call 1 workspace_list_skills '{"active_only":true}')")
expect_match "a new session starts with no active skill" '"output":"No skills found."' "$(line 1)"

# ---- the policy's external embedding command ------------------------------------------------
out=$(talk embedder \
  "$(call 1 workspace_index_content '{"path":"/r","content":"red red red","metadata":null}')" \
  "$(call 2 workspace_index_content '{"path":"/b","content":"blue blue","metadata":null}')" \
  "$(call 3 workspace_index_content '{"path":"/rb","content":"red and blue","metadata":null}')" \
  "$(call 4 workspace_search '{"query":"blue","mode":"vector","top_k":1}')" \
  "$(call 5 workspace_search '{"query":"red","mode":"vector","top_k":1}')" \
)
expect_match "external embedding: indexed with vectors" '"vector_indexed":1' "$(line 1)"
expect_match "external embedding: the command's vectors rank (blue)" '"results":\[\{"id":"/b"' "$(line 4)"
expect_match "external embedding: the command's vectors rank (red)" '"results":\[\{"id":"/r"' "$(line 5)"
bad=$T_TMP/bad.json
printf '{"version":1,"roles":{"worker":{"surface":"wap","tools":{"embedding_command":"true"}}}}' >"$bad"
run_capture tout terr rc "$CORRAL" policy check "$bad"
expect_status "embedding_command on another surface is a policy error" 1 "$rc" "$terr $tout"
expect_match "and says why" 'embedding_command is for the voltagent surface' "$tout $terr"

# ---- the trail --------------------------------------------------------------------------------
run_capture tout terr rc "$CORRAL" trail --db "$db" --type denial --json
expect_match "trail: the allowlist refusal is a denial" '"rule":"skill files: only those its SKILL.md lists"' "$tout"
expect_match "trail: the approval refusal is a denial" '"rule":"needs approval"' "$tout"
expect_nomatch "trail: an unknown skill is no denial" 'Skill not found' "$tout"
run_capture tout terr rc "$CORRAL" trail verify --db "$db"
expect_status "the trail verifies" 0 "$rc" "$terr $tout"
