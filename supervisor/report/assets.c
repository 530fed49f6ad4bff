/* supervisor/report/assets.c: the page's one style sheet and one script, and the hashes its
 * Content-Security-Policy allows them by: nothing else may run, load or style the page. The
 * script reads the marks' data-* attributes and writes text only (textContent, setAttribute
 * of numbers): it never parses the trail's strings as markup. */
#include "supervisor/report/internal.h"

#include <string.h>

#include <sodium.h>

const char report_css[] =
    "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;margin:0;color:#1d232a;background:#fafbfc}"
    "header{background:#1f3a5f;color:#fff;padding:14px 24px}header h1{margin:0;font-size:20px}"
    "header .sub{opacity:.85;font-size:13px;word-break:break-all}"
    "main{padding:8px 24px 40px}section{background:#fff;border:1px solid #dde3ea;border-radius:6px;margin:16px 0;padding:8px 16px 14px}"
    "h2{font-size:17px;margin:8px 0 10px}"
    ".banner{margin:16px 0;padding:10px 16px;border-radius:6px;font-weight:600}"
    ".banner.bad{background:#fde2e2;border:1px solid #e39a9a;color:#7a1010}.banner.ok{background:#e6f4ea;border:1px solid #9ccfab;color:#145a26}"
    "dl.summary{display:grid;grid-template-columns:max-content 1fr;gap:4px 18px;margin:0}dl.summary dt{color:#58636f}dl.summary dd{margin:0;word-break:break-all}"
    "table{border-collapse:collapse;width:100%;font-size:13px}th,td{text-align:left;padding:4px 8px;border-bottom:1px solid #eef1f4;vertical-align:top}"
    "th{color:#58636f;font-weight:600;background:#f6f8fa}"
    ".id,code{font-family:ui-monospace,'DejaVu Sans Mono',Menlo,monospace;font-size:12px;color:#4a5561;word-break:break-all}"
    ".d1{padding-left:26px}.d2{padding-left:44px}.d3{padding-left:62px}.d4{padding-left:80px}.d5{padding-left:98px}.d6{padding-left:116px}.d7{padding-left:134px}.d8{padding-left:152px}"
    ".state{display:inline-block;padding:0 6px;border-radius:8px;background:#eef1f4;font-size:12px}"
    ".state.closed,.state.integrated,.state.completed{background:#d8f3dc}.state.failed,.state.aborted{background:#f8c4c4}.state.active{background:#ffe8a3}"
    ".meter rect.bg{fill:#eef1f4}.meter rect.fill{fill:#4c8bd6}.meter rect.fill.hot{fill:#d9822b}.meter rect.fill.over{fill:#c0392b}"
    "pre{white-space:pre-wrap;word-break:break-all;font:12px/1.4 ui-monospace,'DejaVu Sans Mono',Menlo,monospace;margin:4px 0}"
    "pre.log{background:#f6f8fa;border:1px solid #eef1f4;padding:6px;max-height:240px;overflow:auto}"
    ".note{color:#58636f;font-style:italic}"
    ".graph{overflow:auto;max-height:640px}.graph svg{max-width:100%;height:auto}"
    ".tl-controls{margin:4px 0 6px}.tl-controls button{margin-right:6px}.hint{color:#58636f;font-size:12px;margin-left:8px}"
    ".legend{font-size:12px;margin-bottom:6px}.legend label{margin-right:12px;white-space:nowrap}.legend .sw{vertical-align:-1px}"
    ".tl-wrap{display:flex;border:1px solid #dde3ea}.tl-labels{flex:none;border-right:1px solid #dde3ea;background:#fff}"
    ".tl-scroll{overflow-x:auto;overflow-y:hidden;flex:1}"
    ".lane-bg{fill:#ffffff}.lane-bg.odd{fill:#f6f8fa}.lane-label{font-size:12px;fill:#1d232a}.lane-label .id{fill:#7a8591;font-size:11px}"
    ".tick{stroke:#e3e7ec}.tick-label{font-size:11px;fill:#58636f}"
    ".m{cursor:pointer;stroke:none}.m:hover,.m.sel{stroke:#111;stroke-width:1.5}"
    ".k-process{fill:#9aa5b1}.m.k-process.bar{fill:#c9d6e3;opacity:.8}.k-tool{fill:#2f80ed}.k-envelope{fill:#8e44ad}.k-signal{fill:#16a085}"
    ".k-checkpoint{fill:#27ae60}.k-task{fill:#f2994a}.k-gate{fill:#b8860b}.k-denial{fill:#d0021b}.k-budget{fill:#e67e22}"
    ".k-workspace{fill:#34495e}.k-network{fill:#00838f}.k-log{fill:#7f8c8d}.k-message{fill:#b0bec5}.k-other{fill:#95a5a6}"
    "#tl.hide-process .k-process,#tl.hide-tool .k-tool,#tl.hide-envelope .k-envelope,#tl.hide-signal .k-signal,"
    "#tl.hide-checkpoint .k-checkpoint,#tl.hide-task .k-task,#tl.hide-gate .k-gate,#tl.hide-denial .k-denial,"
    "#tl.hide-budget .k-budget,#tl.hide-workspace .k-workspace,#tl.hide-network .k-network,#tl.hide-log .k-log,"
    "#tl.hide-message .k-message,#tl.hide-other .k-other{display:none}"
    ".detail{margin-top:8px;border:1px solid #dde3ea;border-radius:4px;padding:6px 10px;background:#fbfcfd;min-height:60px}"
    "#detail-head{font-weight:600;font-size:13px;word-break:break-all}#detail{max-height:360px;overflow:auto}"
    "footer{color:#7a8591;font-size:12px;padding:0 24px 24px}";

/* Zoom keeps the time under the pointer (or the centre) in place; ticks fall on 1-2-5 steps. */
const char report_js[] =
    "(function(){'use strict';\n"
    "var tl=document.getElementById('tl');if(!tl)return;\n"
    "var sc=document.getElementById('tl-scroll'),axis=document.getElementById('tl-axis');\n"
    "var head=document.getElementById('detail-head'),body=document.getElementById('detail');\n"
    "var span=+tl.getAttribute('data-span')||1,base=+tl.getAttribute('data-width'),pad=+tl.getAttribute('data-pad');\n"
    "var axisH=+tl.getAttribute('data-axis'),height=+tl.getAttribute('height');\n"
    "var marks=tl.querySelectorAll('.m'),zoom=1,maxZoom=1,pinned=null;\n"
    "function fit(){var w=sc.clientWidth-2*pad;if(w>100)base=w;maxZoom=Math.max(1,Math.min(span/base*4,2000000/base));}\n"
    "var NS='http://www.w3.org/2000/svg';\n"
    "function fmt(us){var a=Math.abs(us);if(a<1000)return us+' \\u00b5s';if(a<1e6)return +(us/1000).toPrecision(4)+' ms';"
    "if(a<6e7)return +(us/1e6).toPrecision(4)+' s';return Math.floor(us/6e7)+' min '+Math.round(us%6e7/1e6)+' s';}\n"
    "function ticks(){while(axis.firstChild)axis.removeChild(axis.firstChild);\n"
    " var px=base*zoom,target=span*110/px,p=Math.pow(10,Math.floor(Math.log10(Math.max(target,1)))),step=p;\n"
    " if(target>step*5)step=p*10;else if(target>step*2)step=p*5;else if(target>step)step=p*2;\n"
    " for(var t=0;t<=span;t+=step){var x=pad+t/span*px;var l=document.createElementNS(NS,'line');\n"
    "  l.setAttribute('class','tick');l.setAttribute('x1',x);l.setAttribute('x2',x);l.setAttribute('y1',axisH-4);l.setAttribute('y2',height);\n"
    "  var s=document.createElementNS(NS,'text');s.setAttribute('class','tick-label');s.setAttribute('x',x+2);s.setAttribute('y',14);\n"
    "  s.textContent='+'+fmt(t);axis.appendChild(l);axis.appendChild(s);}}\n"
    "function layout(){var px=base*zoom,w=px+2*pad;tl.setAttribute('width',w);tl.setAttribute('viewBox','0 0 '+w+' '+height);\n"
    " for(var i=0;i<marks.length;i++){var m=marks[i],t=+m.getAttribute('data-t'),d=+m.getAttribute('data-d');\n"
    "  m.setAttribute('x',pad+t/span*px);m.setAttribute('width',Math.max(d/span*px,3));}\n"
    " ticks();}\n"
    "function zoomTo(z,cx){z=Math.min(Math.max(z,1),maxZoom);if(z===zoom)return;\n"
    " if(cx===undefined)cx=sc.clientWidth/2;var t=(sc.scrollLeft+cx-pad)/(base*zoom);zoom=z;layout();\n"
    " sc.scrollLeft=t*base*zoom+pad-cx;}\n"
    "document.getElementById('zin').addEventListener('click',function(){zoomTo(zoom*2);});\n"
    "document.getElementById('zout').addEventListener('click',function(){zoomTo(zoom/2);});\n"
    "document.getElementById('zfit').addEventListener('click',function(){zoomTo(1);sc.scrollLeft=0;});\n"
    "sc.addEventListener('wheel',function(e){if(!e.ctrlKey&&!e.metaKey)return;e.preventDefault();\n"
    " var r=sc.getBoundingClientRect();zoomTo(zoom*(e.deltaY<0?1.25:0.8),e.clientX-r.left);},{passive:false});\n"
    "function show(m){head.textContent=m.getAttribute('data-h');body.textContent=m.getAttribute('data-b');}\n"
    "tl.addEventListener('mouseover',function(e){var m=e.target;if(!pinned&&m.classList&&m.classList.contains('m'))show(m);});\n"
    "tl.addEventListener('click',function(e){var m=e.target;if(!m.classList||!m.classList.contains('m'))return;\n"
    " if(pinned)pinned.classList.remove('sel');if(pinned===m){pinned=null;return;}pinned=m;m.classList.add('sel');show(m);});\n"
    "var boxes=document.querySelectorAll('.kind-toggle');\n"
    "for(var i=0;i<boxes.length;i++)boxes[i].addEventListener('change',function(e){\n"
    " tl.classList.toggle('hide-'+e.target.getAttribute('data-kind'),!e.target.checked);});\n"
    "fit();layout();window.addEventListener('resize',function(){var z=zoom;fit();zoom=Math.min(z,maxZoom);layout();});\n"
    "document.documentElement.setAttribute('data-ready','1');\n"
    "})();\n";

void report_csp_hash(const char *text, char out[64])
{
    unsigned char h[crypto_hash_sha256_BYTES];
    crypto_hash_sha256(h, (const unsigned char *)text, strlen(text));
    char b64[sodium_base64_ENCODED_LEN(crypto_hash_sha256_BYTES, sodium_base64_VARIANT_ORIGINAL)];
    sodium_bin2base64(b64, sizeof(b64), h, sizeof(h), sodium_base64_VARIANT_ORIGINAL);
    snprintf(out, 64, "'sha256-%s'", b64);
}
