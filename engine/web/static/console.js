// Live updates from the console's event streams (Server-Sent Events read from the store).
"use strict";
function esc(s){return String(s??"").replace(/[&<>"]/g,c=>({"&":"&amp;","<":"&lt;",">":"&gt;",'"':"&quot;"}[c]));}
function runsPage(table){
  const filter=table.dataset.status;
  const es=new EventSource("/events/runs");
  es.addEventListener("runs",ev=>{
    const rows=JSON.parse(ev.data).filter(r=>!filter||r.status===filter);
    table.tBodies[0].innerHTML=rows.map(r=>`<tr data-run="${esc(r.run_id)}"><td style="padding-left:${0.4+1.5*(r.depth||0)}em">${r.depth?"↳ ":""}<a href="/runs/${esc(r.run_id)}">${esc(r.run_id)}</a></td><td><span class="status ${esc(r.status)}">${esc(r.status)}</span></td><td>${esc(r.machine)}</td><td>${esc(r.state)}</td><td>${r.steps}</td><td>${r.tokens}</td><td>${esc(r.cost)}</td><td>${esc(r.age)}</td></tr>`).join("")||'<tr class="empty"><td colspan="8">no runs</td></tr>';
  });
}
let diagramTimer=null,diagramBusy=false;
function loadDiagram(){
  const box=document.getElementById("diagram"); if(!box||diagramBusy)return; diagramBusy=true;
  fetch(box.dataset.src,{cache:"no-store"}).then(r=>r.ok?r.text():"").then(t=>{if(t)box.innerHTML=t;}).finally(()=>{diagramBusy=false;});
}
function forkForm(run,seq,csrf){
  return `<form method="post" action="/runs/${encodeURIComponent(run)}/fork" class="fork"><input type="hidden" name="csrf" value="${esc(csrf)}"><input type="hidden" name="step" value="${seq}"><button type="submit" title="a new run that begins at this step, its workspace as it was">fork from here</button></form>`;
}
function runPage(table){
  loadDiagram();
  const run=table.dataset.run, body=table.tBodies[0], out=document.getElementById("stream");
  const es=new EventSource(`/runs/${encodeURIComponent(run)}/events?step=${table.dataset.step}&stream=${table.dataset.stream}`);
  es.addEventListener("step",ev=>{
    const s=JSON.parse(ev.data);
    const html=`<td>${s.seq}</td><td>${esc(s.state)}</td><td>${esc(s.action)}</td><td class="st ${esc(s.status)}">${esc(s.status)}</td><td>${esc(s.trigger)}${s.dest?" → "+esc(s.dest):""}</td><td>${esc(s.duration)}</td><td>${esc(s.note)}</td><td>${s.action?forkForm(run,s.seq,table.dataset.csrf):""}</td>`;
    let tr=body.querySelector(`tr[data-seq="${s.seq}"]`);
    if(!tr){tr=document.createElement("tr");tr.dataset.seq=s.seq;tr.className="new";body.appendChild(tr);}
    tr.innerHTML=html;
    clearTimeout(diagramTimer); diagramTimer=setTimeout(loadDiagram,150);
  });
  let step=out.dataset.step===""?null:Number(out.dataset.step);
  es.addEventListener("stream",ev=>{
    const e=JSON.parse(ev.data), span=document.createElement("span");
    if(e.step!==step){  // a new step (a model turn, a tool's output): its own block
      const turn=document.createElement("span");
      turn.className="turn"; turn.textContent=(step===null?"":"\n")+`── step ${e.step} ──\n`;
      out.appendChild(turn); step=e.step;
    }
    const last=out.lastElementChild;
    span.className=e.channel;
    span.textContent=(last.className!=="turn"&&last.className!==e.channel&&!/\n$/.test(last.textContent)?"\n":"")+e.text; out.appendChild(span); out.scrollTop=out.scrollHeight;
  });
  es.addEventListener("run",ev=>{
    const r=JSON.parse(ev.data), st=document.getElementById("run-status");
    st.textContent=r.status; st.className="status "+r.status;
    document.getElementById("run-state").textContent=r.state;
    document.getElementById("run-steps").textContent=r.steps;
    document.getElementById("run-tokens").textContent=r.tokens;
    document.getElementById("run-cost").textContent=r.cost;
    const resume=document.querySelector("form.resume");  // offered while nothing drives the run
    if(resume)resume.hidden=!["interrupted","crashed"].includes(r.status);
    if(r.status!=="waiting_approval")document.querySelectorAll(".approval").forEach(n=>n.remove());
  });
}
document.addEventListener("DOMContentLoaded",()=>{
  const runs=document.getElementById("runs"); if(runs)runsPage(runs);
  const steps=document.getElementById("steps"); if(steps)runPage(steps);
});
