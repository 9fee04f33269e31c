#!/usr/bin/env bash
# make/data.sh - how the data-* cases of the tool-output corpus were made.
#
# Group "data-" (kinds json, log, trace, file_read). Each step below sets up a real
# project in /tmp/corpus-data, runs the real tool (or, for Kubernetes only, builds the
# output from real kubectl object JSON - see step 4) and saves the tool's output,
# stdout and stderr interleaved as a terminal shows them, to /tmp/corpus-data/out/<id>.txt.
# The last step gzips each one (gzip -9n, reproducible bytes) into ../cases/<id>.out.gz.
# The <id>.json files beside them (request, needles, why) were written by hand from the
# request and the saved output alone.
#
# This is documentation and a way to regenerate by hand; CI does not run it. Needs:
# network access to PyPI, npm and Debian only; apt packages nginx, rsyslog,
# libjackson2-databind-java, libjetty9-java, librust-tokio-dev, librust-serde-json-dev,
# golang-go (1.19), openjdk-17-jdk; node 20 + npm; a rust toolchain (cargo); kubectl.
# Servers are bound to 127.0.0.1 only and every load loop is bounded.
# Outputs contain timestamps, pids and random ids, so a rerun gives the same shapes,
# not the same bytes; the needles in the .json files are those of the saved run.
#
# usage: bash make/data.sh [STEP...]     (default: all steps, then the gzip step)
set -euo pipefail
. "$(dirname "$0")/common.sh"  # cargo_offline
W=/tmp/corpus-data
OUT=$W/out
CASES="$(cd "$(dirname "$0")/.." && pwd)/cases"
mkdir -p "$OUT"
export PATH=/usr/lib/go-1.19/bin:$PATH

# ---------------------------------------------------------------------------
# step 1: npm view of a real package (eslint, MIT) -> data-npm-view-eslint
step1() {
  mkdir -p $W/npmview && cd $W/npmview
  npm view eslint --json > eslint.json 2>&1
  cp eslint.json $OUT/data-npm-view-eslint.txt
}

# ---------------------------------------------------------------------------
# step 2: npm ls --all --json of a real installed project -> data-npm-ls-orders-api
step2() {
  mkdir -p $W/npmls && cd $W/npmls
mkdir -p "$(dirname package.json)"
cat > package.json <<'EOF_PACKAGE_JSON'
{
  "name": "orders-api",
  "version": "1.4.0",
  "private": true,
  "dependencies": {
    "express": "4.21.2",
    "jsonwebtoken": "9.0.2",
    "winston": "3.17.0",
    "pg": "8.13.1",
    "axios": "1.7.9"
  },
  "devDependencies": {
    "nodemon": "3.1.9",
    "eslint": "8.57.1"
  }
}
EOF_PACKAGE_JSON
  npm install --no-audit --no-fund
  npm ls --all --json > ls.json 2>&1 || true
  cp ls.json $OUT/data-npm-ls-orders-api.txt
}

# ---------------------------------------------------------------------------
# step 3: pip inspect of a small real venv -> data-pip-inspect-venv
# (MIT/BSD packages only: requests was left out because it brings certifi, MPL-2.0)
step3() {
  cd $W && rm -rf pipv && python3.11 -m venv pipv      # pip 23.2.1
  pipv/bin/pip install -q urllib3==2.8.0 rich==13.9.4 click==8.1.8 Jinja2==3.1.5
  pipv/bin/pip inspect > pip-inspect.json 2>&1
  cp pip-inspect.json $OUT/data-pip-inspect-venv.txt
}

# ---------------------------------------------------------------------------
# step 4: kubectl get pods -A -o json -> data-kubectl-pods-crashloop   (SYNTHESIZED)
# There is no Kubernetes cluster here. gen_pods.py takes, for every workload, the real
# pod spec that `kubectl create deployment ... --dry-run=client -o json` prints and
# fills in metadata and status the way the API server does; ledger-writer's second
# replica is given a CrashLoopBackOff state with an OOMKilled lastState.
step4() {
  mkdir -p $W/k8s && cd $W/k8s
mkdir -p "$(dirname gen_pods.py)"
cat > gen_pods.py <<'EOF_GEN_PODS_PY'
"""Build a `kubectl get pods -A -o json` style List from real kubectl object JSON.

No cluster here: the pod spec of every pod is the real `spec.template.spec` that
`kubectl create deployment NAME --image=IMG --port=P --dry-run=client -o json` prints;
the rest (uid, node, status, restarts) is filled in the way the API server does.
One pod (payments/ledger-writer) is in CrashLoopBackOff after an OOM kill.
"""
import json, random, subprocess, hashlib, sys
SUF = "bcdfghjklmnpqrstvwxz2456789"

random.seed(7)
NODES = ["gke-prod-pool-a-3f2b9c1d-7xkq", "gke-prod-pool-a-3f2b9c1d-m4zt", "gke-prod-pool-b-91ce04aa-p2lw"]
HOSTIPS = {n: f"10.128.0.{i}" for i, n in zip((12, 13, 27), NODES)}
T0 = "2026-11-20T08:14:{:02d}Z"

def kubectl_spec(name, image, port):
    cmd = ["kubectl", "create", "deployment", name, f"--image={image}", "--dry-run=client", "-o", "json"]
    if port: cmd.insert(5, f"--port={port}")
    return json.loads(subprocess.check_output(cmd))["spec"]["template"]["spec"]

def h(s, n):  # pod-template-hash style: only the "safe" alphabet
    return "".join(SUF[int(x, 16) % len(SUF)] for x in hashlib.sha1(s.encode()).hexdigest()[:n])
def uid(s):
    x = hashlib.md5(s.encode()).hexdigest(); return f"{x[:8]}-{x[8:12]}-{x[12:16]}-{x[16:20]}-{x[20:32]}"
def suffix(s, n=5): return "".join(random.choice(SUF) for _ in range(n))

APPS = [  # namespace, app, image, port, replicas, kind, mem limit, cpu req
    ("cert-manager", "cert-manager", "quay.io/jetstack/cert-manager-controller:v1.14.4", 9402, 1, "Deployment", "256Mi", "50m"),
    ("ingress-nginx", "ingress-nginx-controller", "registry.k8s.io/ingress-nginx/controller:v1.10.1", 80, 2, "Deployment", "512Mi", "100m"),
    ("kube-system", "coredns", "registry.k8s.io/coredns/coredns:v1.11.1", 53, 2, "Deployment", "170Mi", "100m"),
    ("kube-system", "kube-proxy", "registry.k8s.io/kube-proxy:v1.29.4", None, 3, "DaemonSet", None, "100m"),
    ("monitoring", "prometheus", "quay.io/prometheus/prometheus:v2.51.2", 9090, 1, "StatefulSet", "2Gi", "500m"),
    ("payments", "fraud-scorer", "registry.internal.example/payments/fraud-scorer:1.8.0", 8080, 2, "Deployment", "1Gi", "250m"),
    ("payments", "ledger-writer", "registry.internal.example/payments/ledger-writer:3.2.1", 8080, 2, "Deployment", "256Mi", "200m"),
    ("payments", "payments-api", "registry.internal.example/payments/payments-api:5.0.4", 8080, 3, "Deployment", "512Mi", "250m"),
    ("shop", "cart", "registry.internal.example/shop/cart:2.3.0", 8080, 2, "Deployment", "256Mi", "100m"),
    ("shop", "catalog", "registry.internal.example/shop/catalog:4.1.2", 8080, 2, "Deployment", "384Mi", "100m"),
    ("shop", "checkout-api", "registry.internal.example/shop/checkout-api:2.14.3", 8080, 3, "Deployment", "512Mi", "250m"),
    ("shop", "frontend", "registry.internal.example/shop/frontend:7.0.0", 3000, 3, "Deployment", "256Mi", "100m"),
]
CRASH = ("payments", "ledger-writer", 1)   # second replica crash-loops

items = []; rv = 48211907; ip = 20
for ns, app, image, port, reps, kind, mem, cpu in APPS:
    spec0 = kubectl_spec(app, image, port)
    tmpl_hash = h(app + "rs", 9) if kind == "Deployment" else h(app + "ds", 10)
    owner_name = f"{app}-{tmpl_hash}" if kind == "Deployment" else app
    owner_kind = "ReplicaSet" if kind == "Deployment" else kind
    for r in range(reps):
        if kind == "StatefulSet": name = f"{app}-{r}"
        elif kind == "DaemonSet": name = f"{app}-{suffix(app)}"
        else: name = f"{app}-{tmpl_hash}-{suffix(app)}"
        node = NODES[r % 3] if kind == "DaemonSet" else random.choice(NODES)
        rv += random.randint(3, 900); ip += 1
        created = T0.format(random.randint(0, 59))
        spec = json.loads(json.dumps(spec0))
        c = spec["containers"][0]
        c["resources"] = {"requests": {"cpu": cpu, "memory": mem or "64Mi"}}
        if mem: c["resources"]["limits"] = {"memory": mem}
        c["terminationMessagePath"] = "/dev/termination-log"
        c["terminationMessagePolicy"] = "File"
        c["imagePullPolicy"] = "IfNotPresent"
        c["volumeMounts"] = [{"name": f"kube-api-access-{suffix(name)}", "readOnly": True,
                              "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}]
        if ns in ("payments", "shop"):
            c["livenessProbe"] = {"httpGet": {"path": "/healthz", "port": port, "scheme": "HTTP"},
                                  "initialDelaySeconds": 10, "timeoutSeconds": 1, "periodSeconds": 10,
                                  "successThreshold": 1, "failureThreshold": 3}
        spec.update({
            "volumes": [{"name": c["volumeMounts"][0]["name"], "projected": {"sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}],
                "defaultMode": 420}}],
            "restartPolicy": spec.get("restartPolicy", "Always"),
            "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
            "serviceAccountName": app if ns != "shop" else "default",
            "serviceAccount": app if ns != "shop" else "default",
            "nodeName": node, "securityContext": {}, "schedulerName": "default-scheduler",
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
            "priority": 0, "enableServiceLinks": True, "preemptionPolicy": "PreemptLowerPriority"})
        crash = (ns, app, r) == CRASH
        started = created.replace("08:14", "08:15")
        cstatus = {"name": app, "state": {"running": {"startedAt": started}}, "lastState": {},
                   "ready": True, "restartCount": random.choice([0, 0, 0, 0, 1, 2]),
                   "image": image, "imageID": image.split(":")[0] + "@sha256:" + hashlib.sha256(image.encode()).hexdigest(),
                   "containerID": "containerd://" + hashlib.sha256(name.encode()).hexdigest(), "started": True}
        conds = [("PodReadyToStartContainers", "True"), ("Initialized", "True"), ("Ready", "True"),
                 ("ContainersReady", "True"), ("PodScheduled", "True")]
        if crash:
            cstatus.update({"state": {"waiting": {"reason": "CrashLoopBackOff",
                "message": f"back-off 5m0s restarting failed container={app} pod={name}_{ns}({uid(name)})"}},
                "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled",
                    "startedAt": "2026-11-27T07:02:41Z", "finishedAt": "2026-11-27T07:03:19Z",
                    "containerID": "containerd://" + hashlib.sha256((name + "x").encode()).hexdigest()}},
                "ready": False, "restartCount": 23, "started": False})
            conds = [("PodReadyToStartContainers", "True"), ("Initialized", "True"), ("Ready", "False"),
                     ("ContainersReady", "False"), ("PodScheduled", "True")]
        conditions = []
        for t, s in conds:
            cd = {"type": t, "status": s, "lastProbeTime": None, "lastTransitionTime": started if s == "True" else "2026-11-27T07:03:20Z"}
            if s == "False":
                cd["reason"] = "ContainersNotReady"; cd["message"] = f"containers with unready status: [{app}]"
            conditions.append(cd)
        labels = {"app": app}
        if kind == "Deployment": labels["pod-template-hash"] = tmpl_hash
        else: labels["controller-revision-hash"] = h(app + "cr", 10)
        if kind == "StatefulSet": labels["statefulset.kubernetes.io/pod-name"] = name
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {
                "creationTimestamp": created, **({"generateName": name[:-5]} if kind != "StatefulSet" else {"generateName": app + "-"}),
                "labels": labels, "name": name, "namespace": ns,
                "ownerReferences": [{"apiVersion": "apps/v1", "blockOwnerDeletion": True, "controller": True,
                                     "kind": owner_kind, "name": owner_name, "uid": uid(owner_name)}],
                "resourceVersion": str(rv), "uid": uid(name)},
               "spec": spec,
               "status": {"conditions": conditions, "containerStatuses": [cstatus],
                          "hostIP": HOSTIPS[node], "hostIPs": [{"ip": HOSTIPS[node]}], "phase": "Running",
                          "podIP": f"10.52.{ip // 250}.{ip % 250}", "podIPs": [{"ip": f"10.52.{ip // 250}.{ip % 250}"}],
                          "qosClass": "Burstable", "startTime": created}}
        items.append(pod)

out = {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}
print(json.dumps(out, indent=4))

EOF_GEN_PODS_PY
  python3 gen_pods.py > pods.json
  cp pods.json $OUT/data-kubectl-pods-crashloop.txt
}

# ---------------------------------------------------------------------------
# venv shared by steps 5-7: SQLAlchemy (MIT), click (BSD), aiohttp (Apache-2.0)
pyapp_venv() {
  [ -x $W/pyapp/bin/python ] && return 0
  python3.11 -m venv $W/pyapp
  $W/pyapp/bin/pip install -q SQLAlchemy==2.0.36 click==8.1.8 aiohttp==3.11.11
}

# ---------------------------------------------------------------------------
# step 5: an aiohttp service log with one unhandled error -> data-aiohttp-orders-log
# orders_api.py: the service; load.py: 400 requests on 127.0.0.1, one of them refunds
# order 2650, which was paid by invoice and has no payment intent (KeyError).
step5() {
  pyapp_venv
  mkdir -p $W/svc && cd $W/svc
mkdir -p "$(dirname orders_api.py)"
cat > orders_api.py <<'EOF_ORDERS_API_PY'
"""orders-api: a small aiohttp service (real aiohttp 3.11, real logging) used to make a service log."""
import asyncio, logging, sys, uuid, random
from aiohttp import web

logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                    format="%(asctime)s %(levelname)-7s %(name)s %(message)s")
log = logging.getLogger("orders")
random.seed(11)
ORDERS = {i: {"id": i, "customer": 1000 + i % 97, "total": round(random.uniform(5, 900), 2),
              "status": random.choice(["paid", "shipped", "delivered", "paid"]),
              "payment": {"provider": "stripe", "intent": f"pi_{i:08x}"} if i % 53 else {"provider": "invoice"}}
          for i in range(1, 6000)}


@web.middleware
async def request_id(request, handler):
    rid = request.headers.get("X-Request-ID") or uuid.uuid4().hex[:16]
    request["rid"] = rid
    try:
        resp = await handler(request)
    except web.HTTPException as e:
        e.headers["X-Request-ID"] = rid
        raise
    except Exception:
        log.exception("rid=%s unhandled error in %s %s", rid, request.method, request.path)
        return web.json_response({"error": "internal", "request_id": rid}, status=500,
                                 headers={"X-Request-ID": rid})
    resp.headers["X-Request-ID"] = rid
    return resp


async def health(request):
    return web.json_response({"ok": True})


async def get_order(request):
    oid = int(request.match_info["oid"])
    order = ORDERS.get(oid)
    if order is None:
        log.warning("rid=%s order %s not found", request["rid"], oid)
        raise web.HTTPNotFound()
    return web.json_response(order)


async def list_orders(request):
    cust = int(request.query.get("customer", "0"))
    found = [o for o in ORDERS.values() if o["customer"] == cust][:20]
    return web.json_response({"items": found})


def refund_amount(order, body):
    amount = body.get("amount", order["total"])
    if amount > order["total"]:
        raise web.HTTPUnprocessableEntity(text="refund exceeds order total")
    return amount


async def refund(request):
    oid = int(request.match_info["oid"])
    order = ORDERS[oid]
    body = await request.json()
    amount = refund_amount(order, body)
    intent = order["payment"]["intent"]          # invoice-paid orders have no payment intent
    log.info("rid=%s refund order=%s amount=%.2f intent=%s", request["rid"], oid, amount, intent)
    await asyncio.sleep(0.001)
    return web.json_response({"order": oid, "refunded": amount, "intent": intent})


async def create_order(request):
    body = await request.json()
    oid = max(ORDERS) + 1
    ORDERS[oid] = {"id": oid, "customer": body["customer"], "total": body["total"], "status": "paid",
                   "payment": {"provider": "stripe", "intent": f"pi_{oid:08x}"}}
    log.info("rid=%s created order=%s customer=%s total=%.2f", request["rid"], oid, body["customer"], body["total"])
    return web.json_response(ORDERS[oid], status=201)


app = web.Application(middlewares=[request_id])
app.add_routes([web.get("/healthz", health), web.get("/api/v1/orders", list_orders),
                web.get("/api/v1/orders/{oid}", get_order), web.post("/api/v1/orders", create_order),
                web.post("/api/v1/orders/{oid}/refund", refund)])

if __name__ == "__main__":
    import os
    web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]),
                print=None if os.environ.get("NO_ACCESS_LOG") else print,
                access_log=None if os.environ.get("NO_ACCESS_LOG") else logging.getLogger("aiohttp.access"),
                access_log_format='%a "%r" %s %b %Tf rid=%{X-Request-ID}o "%{User-Agent}i"')
EOF_ORDERS_API_PY
mkdir -p "$(dirname load.py)"
cat > load.py <<'EOF_LOAD_PY'
"""Bounded load on 127.0.0.1 only: N requests, then stop. Exactly one refund hits an invoice-paid order."""
import asyncio, random, sys, uuid
import aiohttp
random.seed(5)
PORT, N = int(sys.argv[1]), int(sys.argv[2])

async def main():
    async with aiohttp.ClientSession(f"http://127.0.0.1:{PORT}") as s:
        for i in range(N):
            rid = uuid.UUID(int=random.getrandbits(128)).hex[:16]
            h = {"X-Request-ID": rid, "User-Agent": random.choice(["shop-frontend/7.0.0", "backoffice/2.3", "python-requests/2.32.3"])}
            r = random.random()
            if i == N * 9 // 16:                       # the one refund of an order paid by invoice
                req = s.post("/api/v1/orders/2650/refund", json={"amount": 4.5}, headers=h)
            elif r < 0.05:
                req = s.get("/healthz", headers=h)
            elif r < 0.60:
                req = s.get(f"/api/v1/orders/{random.randint(1, 6200)}", headers=h)
            elif r < 0.80:
                req = s.get("/api/v1/orders", params={"customer": random.randint(1000, 1096)}, headers=h)
            elif r < 0.92:
                req = s.post("/api/v1/orders", json={"customer": random.randint(1000, 1096), "total": round(random.uniform(5, 400), 2)}, headers=h)
            else:
                oid = random.choice([o for o in range(1, 5900) if o % 53])
                req = s.post(f"/api/v1/orders/{oid}/refund", json={"amount": round(random.uniform(1, 5), 2)}, headers=h)
            async with req as resp:
                await resp.read()
            await asyncio.sleep(0.004)
asyncio.run(main())
EOF_LOAD_PY
  ../pyapp/bin/python -u orders_api.py 18081 > orders-api.log 2>&1 &
  local srv=$!; sleep 2
  timeout 300 ../pyapp/bin/python load.py 18081 400
  sleep 0.5; kill $srv; wait $srv || true
  cp orders-api.log $OUT/data-aiohttp-orders-log.txt      # the agent ran: cat orders-api.log
}

# ---------------------------------------------------------------------------
# step 6: syslog of a web box -> data-syslog-nginx-502
# Real rsyslogd writes RSYSLOG_FileFormat lines to $W/syslog/syslog (standing in for
# /var/log/syslog); nginx (error_log and access_log to syslog) proxies /api/ to the
# orders-api of step 5 and /inventory/ to python's http.server; orders-api and the
# inventory server log through logger(1). load2.py sends 290 requests and kills the
# inventory backend for exactly one request (nginx: connect() failed ... 502), then
# restarts it.
step6() {
  pyapp_venv
  apt-get install -y nginx rsyslog >/dev/null
  mkdir -p $W/syslog/www/inventory && cd $W/syslog
  for i in $(seq 100 160); do echo "{\"sku\": \"sku-$i\", \"stock\": $((i*7%23))}" > www/inventory/sku-$i.json; done
mkdir -p "$(dirname rsyslog.conf)"
cat > rsyslog.conf <<'EOF_RSYSLOG_CONF'
# like Debian 12's /etc/rsyslog.conf, but on a private socket and file
global(workDirectory="/tmp/corpus-data/syslog")
module(load="imuxsock" SysSock.Use="off")
input(type="imuxsock" Socket="/tmp/corpus-data/syslog/log.sock" CreatePath="on" UseSpecialParser="off" ParseHostname="on")
module(load="builtin:omfile" Template="RSYSLOG_FileFormat" fileCreateMode="0640")
*.*;auth,authpriv.none  -/tmp/corpus-data/syslog/syslog
EOF_RSYSLOG_CONF
mkdir -p "$(dirname nginx.conf)"
cat > nginx.conf <<'EOF_NGINX_CONF'
worker_processes 2;
pid /tmp/corpus-data/syslog/nginx.pid;
error_log syslog:server=unix:/tmp/corpus-data/syslog/log.sock,tag=nginx warn;
events { worker_connections 256; }
http {
    access_log off;
    client_body_temp_path /tmp/corpus-data/syslog/tmp_body;
    proxy_temp_path /tmp/corpus-data/syslog/tmp_proxy;
    fastcgi_temp_path /tmp/corpus-data/syslog/tmp_fcgi;
    uwsgi_temp_path /tmp/corpus-data/syslog/tmp_uwsgi;
    scgi_temp_path /tmp/corpus-data/syslog/tmp_scgi;
    log_format main '$remote_addr "$request" $status $body_bytes_sent rt=$request_time urt=$upstream_response_time req_id=$request_id';
    upstream orders { server 127.0.0.1:18081; }
    upstream inventory { server 127.0.0.1:18082 max_fails=0; }
    server {
        listen 127.0.0.1:18080;
        server_name shop.local;
        access_log syslog:server=unix:/tmp/corpus-data/syslog/log.sock,tag=nginx_access,severity=info main;
        location /api/ { proxy_pass http://orders; proxy_set_header X-Request-ID $request_id; }
        location /inventory/ { proxy_pass http://inventory; proxy_set_header X-Request-ID $request_id; }
        location = /healthz { return 200 "ok\n"; }
    }
}
EOF_NGINX_CONF
mkdir -p "$(dirname inventory.sh)"
cat > inventory.sh <<'EOF_INVENTORY_SH'
#!/bin/bash
# the inventory backend: python's http.server over www/, its log lines sent to syslog
cd /tmp/corpus-data/syslog/www
exec > >(exec logger -u /tmp/corpus-data/syslog/log.sock -t inventory) 2>&1
echo $$ > /tmp/corpus-data/syslog/inventory.pid
exec python3 -m http.server 18082 --bind 127.0.0.1
EOF_INVENTORY_SH
mkdir -p "$(dirname load2.py)"
cat > load2.py <<'EOF_LOAD2_PY'
"""Bounded load through nginx on 127.0.0.1:18080; at one point the inventory backend is briefly down."""
import asyncio, random, sys, subprocess, time
import aiohttp
random.seed(21)
N = int(sys.argv[1]); DOWN_AT = N * 5 // 9

async def main():
    async with aiohttp.ClientSession("http://127.0.0.1:18080") as s:
        for i in range(N):
            if i == DOWN_AT:
                # the inventory backend dies (pid file written by make step) and is restarted 2 s later
                subprocess.run(["bash", "-c", "kill $(cat inventory.pid)"]); time.sleep(0.3)
                async with s.get("/inventory/sku-137.json") as r: await r.read()
                subprocess.Popen(["./inventory.sh"])
                time.sleep(2)
                continue
            r = random.random()
            if r < 0.08: req = s.get("/healthz")
            elif r < 0.45: req = s.get(f"/api/v1/orders/{random.randint(1, 6100)}")
            elif r < 0.60: req = s.get("/api/v1/orders", params={"customer": random.randint(1000, 1096)})
            elif r < 0.70: req = s.post("/api/v1/orders", json={"customer": random.randint(1000, 1096), "total": round(random.uniform(5, 400), 2)})
            else: req = s.get(f"/inventory/sku-{random.randint(100, 163)}.json")
            async with req as resp: await resp.read()
            await asyncio.sleep(0.01)
asyncio.run(main())
EOF_LOAD2_PY
mkdir -p "$(dirname run.sh)"
cat > run.sh <<'EOF_RUN_SH'
#!/bin/bash
# start rsyslogd, orders-api, inventory and nginx on 127.0.0.1, drive N requests, stop everything
set -u
cd /tmp/corpus-data/syslog
rm -f syslog
rsyslogd -f rsyslog.conf -i /tmp/corpus-data/syslog/rsyslogd.pid; sleep 1
NO_ACCESS_LOG=1 ../pyapp/bin/python -u ../svc/orders_api.py 18081 > >(exec logger -u log.sock -t orders-api) 2>&1 &
ORDERS=$!
./inventory.sh & sleep 1
nginx -c /tmp/corpus-data/syslog/nginx.conf; sleep 1
../pyapp/bin/python load2.py "$1"
sleep 1
nginx -c /tmp/corpus-data/syslog/nginx.conf -s stop
kill $ORDERS $(cat inventory.pid); sleep 1
kill $(cat rsyslogd.pid)
EOF_RUN_SH
  chmod +x inventory.sh run.sh
  ./run.sh 290
  cp syslog $OUT/data-syslog-nginx-502.txt                 # the agent ran: cat /var/log/syslog
}

# ---------------------------------------------------------------------------
# step 7: a chained Python traceback through SQLAlchemy -> data-python-sqlalchemy-chained
# Planted data bug (make_db.py): one invoice number is issued twice. The unique
# constraint fails during an autoflush; the except block then uses the session again
# and raises PendingRollbackError ("During handling of the above exception ...").
step7() {
  pyapp_venv
  mkdir -p $W/pyapp/src && cd $W/pyapp/src
mkdir -p "$(dirname billing/__init__.py)"
cat > billing/__init__.py <<'EOF___INIT___PY'

EOF___INIT___PY
mkdir -p "$(dirname billing/models.py)"
cat > billing/models.py <<'EOF_MODELS_PY'
from decimal import Decimal
from datetime import datetime
from sqlalchemy import DateTime, ForeignKey, Numeric, String, func
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


class Base(DeclarativeBase):
    pass


class Customer(Base):
    __tablename__ = "customers"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(120))
    invoices: Mapped[list["Invoice"]] = relationship(back_populates="customer")


class Invoice(Base):
    __tablename__ = "invoices"
    id: Mapped[int] = mapped_column(primary_key=True)
    customer_id: Mapped[int] = mapped_column(ForeignKey("customers.id"))
    number: Mapped[str] = mapped_column(String(32))
    amount: Mapped[Decimal] = mapped_column(Numeric(12, 2))
    status: Mapped[str] = mapped_column(String(16), default="open")
    customer: Mapped[Customer] = relationship(back_populates="invoices")


class PushedInvoice(Base):
    """One row per invoice handed to the ledger; invoice numbers are unique ledger-wide."""
    __tablename__ = "pushed_invoices"
    id: Mapped[int] = mapped_column(primary_key=True)
    invoice_number: Mapped[str] = mapped_column(String(32), unique=True)
    customer_id: Mapped[int] = mapped_column(ForeignKey("customers.id"))
    amount: Mapped[Decimal] = mapped_column(Numeric(12, 2))
    pushed_at: Mapped[datetime] = mapped_column(DateTime, server_default=func.now())
EOF_MODELS_PY
mkdir -p "$(dirname billing/sync.py)"
cat > billing/sync.py <<'EOF_SYNC_PY'
import logging
from sqlalchemy import create_engine, select, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, selectinload

from .models import Base, Customer, Invoice, PushedInvoice

log = logging.getLogger("billing.sync")


class SyncFailed(RuntimeError):
    pass


def open_invoices(session, customer_id):
    stmt = (select(Invoice).where(Invoice.customer_id == customer_id, Invoice.status == "open")
            .options(selectinload(Invoice.customer)).order_by(Invoice.number))
    return session.scalars(stmt).all()


def push_batch(session, customer):
    invoices = open_invoices(session, customer.id)
    total = sum(i.amount for i in invoices)
    for inv in invoices:
        session.add(PushedInvoice(invoice_number=inv.number, customer_id=customer.id, amount=inv.amount))
    log.info("customer %s: pushed %d open invoices, total %s", customer.id, len(invoices), total)
    return len(invoices)


def run(db_url, batch_size):
    engine = create_engine(db_url)
    Base.metadata.create_all(engine)
    with Session(engine) as session:
        customers = session.execute(text("SELECT id, name FROM customers ORDER BY id")).all()
        log.info("syncing %d customers from %s in batches of %d", len(customers), db_url, batch_size)
        done = 0
        for c in customers:
            try:
                done += push_batch(session, c)
            except DBAPIError:
                log.error("customer %s: batch failed after %d invoices", c.id, done)
                session.execute(text("INSERT INTO sync_failures (customer_id, pushed) VALUES (:c, :n)"),
                                {"c": c.id, "n": done})
                session.commit()
                raise
        session.commit()
        return done
EOF_SYNC_PY
mkdir -p "$(dirname billing/cli.py)"
cat > billing/cli.py <<'EOF_CLI_PY'
import logging
import click
from . import sync


@click.group()
@click.option("-v", "--verbose", is_flag=True)
def cli(verbose):
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO,
                        format="%(asctime)s %(levelname)-5s %(name)s: %(message)s")


@cli.command("sync-invoices")
@click.option("--db", default="sqlite:///billing.db")
@click.option("--batch-size", default=200)
def sync_invoices(db, batch_size):
    n = sync.run(db, batch_size)
    click.echo(f"pushed {n} invoices")


if __name__ == "__main__":
    cli()
EOF_CLI_PY
mkdir -p "$(dirname make_db.py)"
cat > make_db.py <<'EOF_MAKE_DB_PY'
# an old (0.8) schema: invoices has no currency column yet
import sqlite3, random
random.seed(3)
db = sqlite3.connect("billing.db")
db.executescript("""
DROP TABLE IF EXISTS invoices; DROP TABLE IF EXISTS customers;
CREATE TABLE customers (id INTEGER PRIMARY KEY, name VARCHAR(120));
CREATE TABLE invoices (id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers(id),
  number VARCHAR(32), amount NUMERIC(12,2), status VARCHAR(16));
""")
names = ["Acme GmbH", "Borealis Oy", "Cobalt Ltd", "Dunmore & Sons", "Eastwind SA", "Fjord AS", "Granite BV"]
for i in range(1, 120):
    db.execute("INSERT INTO customers VALUES (?, ?)", (i, f"{random.choice(names)} #{i}"))
    for j in range(random.randint(0, 6)):
        db.execute("INSERT INTO invoices (customer_id, number, amount, status) VALUES (?,?,?,?)",
                   (i, f"INV-{i:04d}-{j}", round(random.uniform(20, 5000), 2), random.choice(["open", "paid"])))
# 0.8 import bug: one invoice number was issued twice (to two customers)
dup = db.execute("SELECT number FROM invoices WHERE customer_id >= 61 AND status = 'open' ORDER BY id LIMIT 1").fetchone()[0]
db.execute("UPDATE invoices SET number = ? WHERE id = (SELECT min(id) FROM invoices WHERE customer_id = 87 AND status = 'open')", (dup,))
db.execute("CREATE TABLE IF NOT EXISTS sync_failures (customer_id INTEGER, pushed INTEGER)")
db.execute("DROP TABLE IF EXISTS pushed_invoices")
db.commit()
EOF_MAKE_DB_PY
  rm -f billing.db; ../bin/python make_db.py
  # the agent ran: python -m billing.cli sync-invoices   (with the venv active)
  ../bin/python -m billing.cli sync-invoices > ../tb.txt 2>&1 || true
  cp ../tb.txt $OUT/data-python-sqlalchemy-chained.txt
}

# ---------------------------------------------------------------------------
# step 8: a Java exception with Caused by: through Jetty and Jackson -> data-java-jetty-caused-by
# Debian's jars: libjetty9-java 9.4.57, libjackson2-databind-java 2.14, servlet-api 4.0.
# Planted data: one shipment (customer C-1187) has a UK postcode with country DE; the
# Address constructor rejects it inside Jackson's deserialization.
step8() {
  apt-get install -y libjackson2-databind-java libjetty9-java >/dev/null
  mkdir -p $W/java && cd $W/java
mkdir -p "$(dirname src/com/acme/shipping/Address.java)"
cat > src/com/acme/shipping/Address.java <<'EOF_ADDRESS_JAVA'
package com.acme.shipping;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.Map;
import java.util.regex.Pattern;

public final class Address {
    private static final Map<String, Pattern> POSTAL = Map.of(
            "DE", Pattern.compile("\\d{5}"),
            "FR", Pattern.compile("\\d{5}"),
            "NL", Pattern.compile("\\d{4} ?[A-Z]{2}"),
            "GB", Pattern.compile("[A-Z]{1,2}\\d[A-Z\\d]? ?\\d[A-Z]{2}"));

    public final String name, street, city, postalCode, country;

    @JsonCreator
    public Address(@JsonProperty("name") String name, @JsonProperty("street") String street,
                   @JsonProperty("city") String city, @JsonProperty("postalCode") String postalCode,
                   @JsonProperty("country") String country) {
        this.name = name;
        this.street = street;
        this.city = city;
        this.country = country;
        Pattern p = POSTAL.get(country);
        if (p == null) {
            throw new IllegalArgumentException("unsupported destination country " + country);
        }
        if (!p.matcher(postalCode).matches()) {
            throw new IllegalArgumentException("postal code '" + postalCode + "' is not valid for country " + country);
        }
        this.postalCode = postalCode;
    }
}
EOF_ADDRESS_JAVA
mkdir -p "$(dirname src/com/acme/shipping/Parcel.java)"
cat > src/com/acme/shipping/Parcel.java <<'EOF_PARCEL_JAVA'
package com.acme.shipping;

public class Parcel {
    public String reference;
    public double weightKg;
    public Address destination;
}
EOF_PARCEL_JAVA
mkdir -p "$(dirname src/com/acme/shipping/Shipment.java)"
cat > src/com/acme/shipping/Shipment.java <<'EOF_SHIPMENT_JAVA'
package com.acme.shipping;

import java.util.List;

public class Shipment {
    public String customerId;
    public String service;
    public Address sender;
    public List<Parcel> parcels;
}
EOF_SHIPMENT_JAVA
mkdir -p "$(dirname src/com/acme/shipping/ShipmentServlet.java)"
cat > src/com/acme/shipping/ShipmentServlet.java <<'EOF_SHIPMENTSERVLET_JAVA'
package com.acme.shipping;

import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.logging.Level;
import java.util.logging.Logger;
import javax.servlet.ServletException;
import javax.servlet.http.HttpServlet;
import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletResponse;

public class ShipmentServlet extends HttpServlet {
    private static final Logger LOG = Logger.getLogger(ShipmentServlet.class.getName());
    private final ObjectMapper mapper = new ObjectMapper();
    private final AtomicLong ids = new AtomicLong(880_000);

    @Override
    protected void doPost(HttpServletRequest req, HttpServletResponse resp) throws ServletException, IOException {
        Shipment s;
        try {
            s = parse(req);
        } catch (ServletException e) {
            LOG.log(Level.SEVERE, "POST /api/shipments failed", e);
            resp.sendError(500, "shipment could not be created");
            return;
        }
        long id = ids.incrementAndGet();
        LOG.info("created shipment " + id + " for " + s.customerId + " (" + s.parcels.size() + " parcels, " + s.service + ")");
        resp.setStatus(201);
        resp.setContentType("application/json");
        resp.getWriter().write("{\"shipmentId\":" + id + ",\"parcels\":" + s.parcels.size() + "}");
    }

    private Shipment parse(HttpServletRequest req) throws ServletException, IOException {
        try {
            return mapper.readValue(req.getInputStream(), Shipment.class);
        } catch (JsonMappingException e) {
            throw new ServletException("cannot read shipment request for customer " + req.getHeader("X-Customer-Id"), e);
        }
    }

    @Override
    protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        resp.setContentType("application/json");
        resp.getWriter().write("{\"status\":\"ok\"}");
    }
}
EOF_SHIPMENTSERVLET_JAVA
mkdir -p "$(dirname src/com/acme/shipping/ShippingServer.java)"
cat > src/com/acme/shipping/ShippingServer.java <<'EOF_SHIPPINGSERVER_JAVA'
package com.acme.shipping;

import org.eclipse.jetty.server.CustomRequestLog;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.servlet.ServletContextHandler;

public class ShippingServer {
    public static void main(String[] args) throws Exception {
        Server server = new Server(new java.net.InetSocketAddress("127.0.0.1", Integer.parseInt(args[0])));
        ServletContextHandler ctx = new ServletContextHandler(ServletContextHandler.SESSIONS);
        ctx.setContextPath("/");
        ctx.addServlet(ShipmentServlet.class, "/api/shipments");
        ctx.addServlet(ShipmentServlet.class, "/healthz");
        server.setHandler(ctx);
        server.setRequestLog(new CustomRequestLog(line -> System.err.println(line),
                "%{client}a - - %t \"%r\" %s %O %{ms}Tms \"%{X-Customer-Id}i\""));
        server.setStopAtShutdown(true);
        server.start();
        server.join();
    }
}
EOF_SHIPPINGSERVER_JAVA
mkdir -p "$(dirname load.py)"
cat > load.py <<'EOF_LOAD_PY'
"""Bounded client on 127.0.0.1: N shipment POSTs (and health checks); one has a GB postcode with country DE."""
import json, random, sys, urllib.request, urllib.error
random.seed(9)
PORT, N = int(sys.argv[1]), int(sys.argv[2])
CITIES = [("Berlin", "10115", "DE"), ("Hamburg", "20095", "DE"), ("Lyon", "69002", "FR"), ("Utrecht", "3511 AB", "NL"),
          ("Leeds", "LS1 4AP", "GB"), ("München", "80331", "DE"), ("Paris", "75011", "FR")]
def addr(i, c):
    return {"name": f"Receiver {i}", "street": f"Hauptstraße {i % 90 + 1}", "city": c[0], "postalCode": c[1], "country": c[2]}
for i in range(N):
    cust = f"C-{random.randint(1000, 1400)}"
    if random.random() < 0.1 and i != N * 3 // 7:
        req = urllib.request.Request(f"http://127.0.0.1:{PORT}/healthz")
    else:
        parcels = [{"reference": f"P{i:05d}-{k}", "weightKg": round(random.uniform(0.2, 20), 1),
                    "destination": addr(i + k, random.choice(CITIES))} for k in range(random.randint(1, 4))]
        if i == N * 3 // 7:   # a parcel whose country was defaulted to DE for a UK address
            cust = "C-1187"
            parcels = [{"reference": f"P{i:05d}-{k}", "weightKg": 2.5, "destination": addr(i, CITIES[k])} for k in range(3)]
            parcels[2]["destination"].update({"city": "London", "postalCode": "SW1A 1AA", "country": "DE"})
        body = {"customerId": cust, "service": random.choice(["standard", "express"]), "sender": addr(0, CITIES[0]), "parcels": parcels}
        req = urllib.request.Request(f"http://127.0.0.1:{PORT}/api/shipments", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json", "X-Customer-Id": cust})
    try:
        urllib.request.urlopen(req, timeout=5).read()
    except urllib.error.HTTPError as e:
        e.read()
EOF_LOAD_PY
  CP=$(echo /usr/share/java/{jetty9-server,jetty9-http,jetty9-io,jetty9-util,jetty9-servlet,jetty9-security,servlet-api,jackson-databind,jackson-core,jackson-annotations}.jar | tr ' ' ':')
  rm -rf classes; javac -d classes -cp "$CP" src/com/acme/shipping/*.java
  java -Djava.util.logging.SimpleFormatter.format='%1$tF %1$tT.%1$tL %4$-7s [%3$s] %5$s%6$s%n' \
       -cp "classes:$CP" com.acme.shipping.ShippingServer 18090 > shipping-server.log 2>&1 &
  local srv=$!; sleep 3
  timeout 300 python3 load.py 18090 300
  sleep 1; kill $srv; wait $srv || true
  cp shipping-server.log $OUT/data-java-jetty-caused-by.txt   # the agent ran: cat shipping-server.log
}

# ---------------------------------------------------------------------------
# step 9: a Rust panic with RUST_BACKTRACE=1 in a tokio task -> data-rust-tokio-panic
# Crates from Debian (librust-tokio-dev 1.24.2, librust-serde-json-dev 1.0.87) through
# a directory source. Planted bug: shard 5's journal has one entry in CHF, for which
# the FX map has no rate; BTreeMap indexing panics in a worker, main then panics on
# the JoinError.
step9() {
  apt-get install -y librust-tokio-dev librust-serde-json-dev >/dev/null
  mkdir -p $W/rust/ledger-replay && cd $W/rust/ledger-replay
cargo_offline .
mkdir -p "$(dirname Cargo.toml)"
cat > Cargo.toml <<'EOF_CARGO_TOML'
[package]
name = "ledger-replay"
version = "0.3.0"
edition = "2021"

[dependencies]
tokio = { version = "1", features = ["rt-multi-thread", "macros", "sync", "time"] }
serde = { version = "1", features = ["derive"] }
serde_json = "1"
EOF_CARGO_TOML
mkdir -p "$(dirname src/main.rs)"
cat > src/main.rs <<'EOF_MAIN_RS'
//! Replays journal entries per account shard and checks running balances.
use serde::Deserialize;
use std::collections::BTreeMap;
use tokio::task::JoinSet;

#[derive(Debug, Deserialize)]
struct Entry {
    seq: u64,
    account: String,
    amount_cents: i64,
    currency: String,
}

struct Shard {
    id: usize,
    balances: BTreeMap<String, i64>,
    fx: BTreeMap<&'static str, i64>, // cents of EUR per unit, x100
}

impl Shard {
    fn new(id: usize) -> Self {
        let fx = BTreeMap::from([("EUR", 100), ("USD", 92), ("GBP", 117)]);
        Shard { id, balances: BTreeMap::new(), fx }
    }

    fn rate(&self, currency: &str) -> i64 {
        self.fx[currency]
    }

    fn apply(&mut self, e: &Entry) {
        let eur = e.amount_cents * self.rate(&e.currency) / 100;
        let bal = self.balances.entry(e.account.clone()).or_insert(0);
        *bal = bal.checked_add(eur).expect("balance overflow");
    }
}

fn journal(shard: usize) -> Vec<String> {
    (0..400u64)
        .map(|i| {
            let seq = shard as u64 * 10_000 + i;
            let cur = match (shard, i) {
                (5, 233) => "CHF", // an entry booked in a currency the replayer has no rate for
                (_, i) if i % 7 == 0 => "USD",
                (_, i) if i % 11 == 0 => "GBP",
                _ => "EUR",
            };
            format!(r#"{{"seq":{seq},"account":"ACC-{:04}","amount_cents":{},"currency":"{cur}"}}"#,
                    (i * 37 + shard as u64) % 250, (i as i64 * 7919) % 50_000 - 20_000)
        })
        .collect()
}

async fn replay_shard(id: usize) -> (usize, usize, i64) {
    let mut shard = Shard::new(id);
    let lines = journal(id);
    for (n, line) in lines.iter().enumerate() {
        let e: Entry = serde_json::from_str(line).unwrap();
        shard.apply(&e);
        if n % 100 == 99 {
            println!("[shard {:02}] replayed {:>3} entries, last seq {}", shard.id, n + 1, e.seq);
            tokio::task::yield_now().await;
        }
    }
    let total: i64 = shard.balances.values().sum();
    (id, shard.balances.len(), total)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 4)]
async fn main() {
    let mut set = JoinSet::new();
    for id in 0..12 {
        set.spawn(replay_shard(id));
    }
    let mut results = Vec::new();
    while let Some(res) = set.join_next().await {
        let (id, accounts, total) = res.expect("shard task failed");
        println!("[shard {id:02}] done: {accounts} accounts, net {total} EUR cents");
        results.push(total);
    }
    println!("all shards replayed, net {} EUR cents", results.iter().sum::<i64>());
}
EOF_MAIN_RS
  cargo build                    # dependencies first, so the saved run shows only the crate itself
  touch src/main.rs
  RUST_BACKTRACE=1 cargo run > ../run.txt 2>&1 || true
  cp ../run.txt $OUT/data-rust-tokio-panic.txt
}

# ---------------------------------------------------------------------------
# step 10: a Go goroutine dump (SIGQUIT) of a deadlocked service -> data-go-sigquit-deadlock
# Debian golang-go 1.19, stdlib only. Planted bug: transfer() locks From then To, and
# two transfers run in opposite directions between ACC-007 and ACC-031.
step10() {
  mkdir -p $W/go/settle && cd $W/go/settle
mkdir -p "$(dirname go.mod)"
cat > go.mod <<'EOF_GO_MOD'
module example.com/settle

go 1.19
EOF_GO_MOD
mkdir -p "$(dirname main.go)"
cat > main.go <<'EOF_MAIN_GO'
// settle: a settlement service. Workers move money between accounts; an HTTP
// endpoint reports progress. Two transfers in opposite directions lock the
// same pair of accounts in opposite order and the service hangs.
package main

import (
	"fmt"
	"log"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

type Account struct {
	mu      sync.Mutex
	ID      string
	Balance int64
}

type Transfer struct {
	From, To *Account
	Amount   int64
}

var settled int64

func transfer(t Transfer) {
	t.From.mu.Lock()
	defer t.From.mu.Unlock()
	time.Sleep(5 * time.Millisecond) // fetch FX rate
	t.To.mu.Lock()
	defer t.To.mu.Unlock()
	t.From.Balance -= t.Amount
	t.To.Balance += t.Amount
	atomic.AddInt64(&settled, 1)
}

func worker(id int, jobs <-chan Transfer, wg *sync.WaitGroup) {
	defer wg.Done()
	for t := range jobs {
		transfer(t)
	}
}

func auditor(accounts []*Account, every time.Duration) {
	for range time.Tick(every) {
		var total int64
		for _, a := range accounts {
			a.mu.Lock()
			total += a.Balance
			a.mu.Unlock()
		}
		log.Printf("audit: %d accounts, total %d, settled %d", len(accounts), total, atomic.LoadInt64(&settled))
	}
}

func main() {
	accounts := make([]*Account, 40)
	for i := range accounts {
		accounts[i] = &Account{ID: fmt.Sprintf("ACC-%03d", i), Balance: 100_000}
	}
	http.HandleFunc("/status", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "settled %d\n", atomic.LoadInt64(&settled))
	})
	go func() { log.Fatal(http.ListenAndServe("127.0.0.1:18095", nil)) }()
	go auditor(accounts, 200*time.Millisecond)

	jobs := make(chan Transfer)
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go worker(i, jobs, &wg)
	}
	// batch 1: a chain of transfers that all complete
	for i := 0; i < 60; i++ {
		jobs <- Transfer{accounts[i%40], accounts[(i+1)%40], 100}
	}
	time.Sleep(300 * time.Millisecond)
	// batch 2: ACC-007 -> ACC-031 and ACC-031 -> ACC-007 at the same time
	jobs <- Transfer{accounts[7], accounts[31], 2500}
	jobs <- Transfer{accounts[31], accounts[7], 1200}
	for i := 0; i < 6; i++ {
		jobs <- Transfer{accounts[7], accounts[i], 10}
	}
	close(jobs)
	wg.Wait()
	log.Printf("all transfers settled")
}
EOF_MAIN_GO
  go build -o settle .
  timeout -s QUIT 3 ./settle > dump.txt 2>&1 || true
  cp dump.txt $OUT/data-go-sigquit-deadlock.txt
}

# ---------------------------------------------------------------------------
# step 11: a Node.js error stack through date-fns and express -> data-node-express-rangeerror
# express 4.21.2, morgan 1.10.0, date-fns 3.6.0 (MIT). Planted data bug: invoice 317's
# due date was imported as "31.10.2026"; express's default error handler prints the stack.
step11() {
  mkdir -p $W/node/billing-web && cd $W/node/billing-web
mkdir -p "$(dirname package.json)"
cat > package.json <<'EOF_PACKAGE_JSON'
{
  "name": "billing-web",
  "version": "2.7.1",
  "private": true,
  "main": "src/server.js",
  "dependencies": {
    "date-fns": "3.6.0",
    "express": "4.21.2",
    "morgan": "1.10.0"
  }
}
EOF_PACKAGE_JSON
mkdir -p "$(dirname src/invoices.js)"
cat > src/invoices.js <<'EOF_INVOICES_JS'
'use strict';
const { format, addDays, parseISO } = require('date-fns');

// invoices as the billing DB returns them; due dates come from two importers
const INVOICES = new Map();
for (let i = 1; i <= 400; i++) {
  const issued = new Date(Date.UTC(2026, 9, 1 + (i % 28)));
  INVOICES.set(i, {
    id: i,
    number: `INV-2026-${String(i).padStart(5, '0')}`,
    customer: `C-${1000 + (i * 13) % 300}`,
    issuedAt: issued.toISOString(),
    // the legacy importer wrote "31.10.2026" style dates for invoice 317
    dueAt: i === 317 ? '31.10.2026' : addDays(issued, 30).toISOString(),
    totalCents: (i * 7919) % 250000 + 990,
  });
}

function formatDueDate(invoice) {
  return format(parseISO(invoice.dueAt), 'dd MMM yyyy');
}

function summary(invoice) {
  return {
    number: invoice.number,
    customer: invoice.customer,
    issued: format(parseISO(invoice.issuedAt), 'dd MMM yyyy'),
    due: formatDueDate(invoice),
    total: (invoice.totalCents / 100).toFixed(2),
  };
}

module.exports = { INVOICES, summary };
EOF_INVOICES_JS
mkdir -p "$(dirname src/server.js)"
cat > src/server.js <<'EOF_SERVER_JS'
'use strict';
const express = require('express');
const morgan = require('morgan');
const { INVOICES, summary } = require('./invoices');

const app = express();
app.use(morgan(':remote-addr - :method :url :status :res[content-length] - :response-time ms'));
app.use(express.json());

app.get('/healthz', (req, res) => res.json({ ok: true }));

app.get('/invoices', (req, res) => {
  const customer = req.query.customer;
  const items = [...INVOICES.values()].filter((i) => !customer || i.customer === customer).slice(0, 20);
  res.json(items.map((i) => i.number));
});

app.get('/invoices/:id', (req, res) => {
  const inv = INVOICES.get(Number(req.params.id));
  if (!inv) return res.status(404).json({ error: 'not found' });
  res.json(summary(inv));
});

const port = Number(process.argv[2] || 18070);
app.listen(port, '127.0.0.1', () => console.log(`billing-web listening on http://127.0.0.1:${port}`));
EOF_SERVER_JS
mkdir -p "$(dirname load.js)"
cat > load.js <<'EOF_LOAD_JS'
// bounded client on 127.0.0.1: N requests, then exit
const port = Number(process.argv[2]); const N = Number(process.argv[3]);
let seed = 17; const rnd = () => ((seed = (seed * 16807) % 2147483647) / 2147483647);
(async () => {
  for (let i = 0; i < N; i++) {
    let path;
    const r = rnd();
    if (i === Math.floor(N * 0.55)) path = '/invoices/317';
    else if (r < 0.07) path = '/healthz';
    else if (r < 0.25) path = `/invoices?customer=C-${1000 + Math.floor(rnd() * 300)}`;
    else { let id = 1 + Math.floor(rnd() * 420); if (id === 317) id = 318; path = `/invoices/${id}`; }
    const res = await fetch(`http://127.0.0.1:${port}${path}`);
    await res.text();
  }
})();
EOF_LOAD_JS
  npm install --no-audit --no-fund
  node src/server.js 18070 > server.log 2>&1 &
  local srv=$!; sleep 1
  node load.js 18070 600
  sleep 0.5; kill $srv; wait $srv || true
  cp server.log $OUT/data-node-express-rangeerror.txt       # the agent ran: cat server.log
}

# ---------------------------------------------------------------------------
# step 12: cat of a long real source file -> data-cat-sympy-primetest
# sympy 1.14.0 (BSD-3-Clause) as unpacked in benchmarks/.data/sympy (or: pip download
# --no-deps --no-binary :all: sympy==1.14.0 and unpack).
step12() {
  local tree; tree="$(cd "$(dirname "$0")/../.." && pwd)/.data/sympy"
  (cd "$tree" && cat sympy/ntheory/primetest.py) > $OUT/data-cat-sympy-primetest.txt
}

# ---------------------------------------------------------------------------
# last step: gzip every saved output into the corpus (reproducible bytes)
pack() {
  for f in $OUT/data-*.txt; do
    id=$(basename "$f" .txt)
    gzip -9n -c "$f" > "$CASES/$id.out.gz"
  done
}

if [ $# -eq 0 ]; then set -- 1 2 3 4 5 6 7 8 9 10 11 12; fi
for s in "$@"; do ( "step$s" ); done
pack
