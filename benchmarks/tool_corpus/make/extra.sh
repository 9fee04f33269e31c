#!/usr/bin/env bash
# How the three "extra" cases of benchmarks/tool_corpus/cases/ were made:
#   test-maven-surefire-jsoup          (step 1: mvn/Surefire on jsoup, planted off-by-one)
#   lint-webpack-build-missing-import  (step 2: webpack in an npm-workspaces monorepo, broken import)
#   lint-docker-build-psutil-sysinfo   (step 3: real BuildKit docker build, planted C error in psutil)
#
# Documentation first, and a way to regenerate by hand; CI does not run it. It needs root, network
# access to PyPI, npm and Debian's apt, plus mvn 3.8.7 + OpenJDK 17 and node 20 / npm 11.
# Everything happens under $W (default /tmp/corpus-extra); each step leaves the tool's combined
# stdout+stderr in $W/final/<case-id>.txt. Turning those into <id>.json + <id>.out.gz was a small
# Python step that copied the text unchanged (gzip -9n).
#
# Outputs hold absolute paths under /tmp/corpus-extra, timings and hashes; rerunning changes those,
# and tool versions change texts, so regenerated outputs will differ in detail (needles may move).
set -euo pipefail
W=${W:-/tmp/corpus-extra}
mkdir -p "$W/final"
OUT=$W/final

# --- step 1: mvn -o -B test on jsoup 1.18.2-SNAPSHOT (MIT), planted off-by-one in Attributes ---
# Source: the jsoup tree jhy/jsoup@1a91aac561 (src/main + src/test/java; this tree has no
# src/test/resources). Copied, never modified in place.
JSOUP_TREE=${JSOUP_TREE:-/tmp/mlcache/trees/jhy+jsoup@1a91aac561}
rm -rf "$W/jsoup" && cp -r "$JSOUP_TREE" "$W/jsoup" && cd "$W/jsoup"
mv pom.xml pom.orig.xml
# jsoup's own pom wants jetty 9.4 (integration tests), animal-sniffer and other plugins that are not
# available offline here. This minimal pom uses only what the machine's local Maven repository
# (~/.m2/repository, used with -o) holds: compiler 3.13.0, resources 3.3.1, surefire 3.2.5,
# junit-jupiter 5.11.3, gson 2.11.0, jspecify 1.0.0. Test classes that need the jetty TestServer
# are not compiled; the 33 test methods that read files from the missing src/test/resources (and
# NodeTest#testReplaceTwice, which errors at this commit without any change) are excluded, so the
# unmodified tree gives "Tests run: 1132, Failures: 0, Errors: 0, Skipped: 48".
EXCL='!CharacterReaderTest#linenumbersAgreeWithEditor, !DataUtilTest#handlesChunkedInputStream, !DataUtilTest#handlesFakeGzipFile, !DataUtilTest#handlesFakeGzipPath, !DataUtilTest#handlesUnlimitedRead, !DataUtilTest#loadsGzipFile, !DataUtilTest#loadsGzipPath, !DataUtilTest#loadsZGzipFile, !DataUtilTest#loadsZGzipPath, !DataUtilTest#parseSequenceInputStream, !DataUtilTest#streamerSupportsBOMinFiles, !DataUtilTest#streamerSupportsZippedUTF8BOM, !DataUtilTest#supportsBOMinFiles, !DataUtilTest#supportsUTF8BOM, !DataUtilTest#supportsZippedUTF8BOM, !DocumentTest#testLocation, !FuzzFixesTest#testHtmlParse, !FuzzFixesTest#testXmlParse, !HtmlParserTest#characterReaderBuffer, !HtmlParserTest#handlesXmlDeclAndCommentsBeforeDoctype, !HtmlParserTest#testInvalidTableContents, !HtmlParserTest#testTemplateInsideTable, !NodeTest#testReplaceTwice, !ParseTest#testFileParseNoCharsetMethod, !ParseTest#testHtml5Charset, !ParseTest#testLowercaseUtf8Charset, !ParseTest#testWikiExpandedFromString, !ParseTest#testWikiFromString, !ParseTest#testXwiki, !ParseTest#testXwikiExpanded, !W3CDomTest#namespacePreservation, !XmlTreeBuilderTest#testDetectCharsetEncodingDeclaration, !XmlTreeBuilderTest#testSupplyParserToDataStream'
cat > pom.xml <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<!-- Minimal offline pom for jsoup 1.18.2-SNAPSHOT: junit + gson + jspecify only; the
     jetty-backed integration tests are left out of test compilation (no jetty 9 offline). -->
<project xmlns="http://maven.apache.org/POM/4.0.0" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:schemaLocation="http://maven.apache.org/POM/4.0.0 http://maven.apache.org/xsd/maven-4.0.0.xsd">
  <modelVersion>4.0.0</modelVersion>
  <name>jsoup Java HTML Parser</name>
  <groupId>org.jsoup</groupId>
  <artifactId>jsoup</artifactId>
  <version>1.18.2-SNAPSHOT</version>
  <properties>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
  </properties>
  <build>
    <plugins>
      <plugin>
        <groupId>org.apache.maven.plugins</groupId>
        <artifactId>maven-resources-plugin</artifactId>
        <version>3.3.1</version>
      </plugin>
      <plugin>
        <groupId>org.apache.maven.plugins</groupId>
        <artifactId>maven-compiler-plugin</artifactId>
        <version>3.13.0</version>
        <configuration>
          <encoding>UTF-8</encoding>
          <source>1.8</source>
          <target>1.8</target>
          <testExcludes>
            <testExclude>org/jsoup/integration/TestServer.java</testExclude>
            <testExclude>org/jsoup/integration/servlets/**</testExclude>
            <testExclude>org/jsoup/integration/Connect*.java</testExclude>
            <testExclude>org/jsoup/integration/ProxyTest.java</testExclude>
            <testExclude>org/jsoup/integration/Session*.java</testExclude>
            <testExclude>org/jsoup/parser/PositionTest.java</testExclude>
            <testExclude>org/jsoup/parser/StreamParserTest.java</testExclude>
            <testExclude>org/jsoup/nodes/FormElementTest.java</testExclude>
          </testExcludes>
        </configuration>
      </plugin>
      <plugin>
        <groupId>org.apache.maven.plugins</groupId>
        <artifactId>maven-surefire-plugin</artifactId>
        <version>3.2.5</version>
        <configuration>
          <!-- these need src/test/resources (htmltests/, fuzztests/, bomtests/), not in this source tree -->
          <test>$EXCL</test>
        </configuration>
      </plugin>
    </plugins>
  </build>
  <dependencies>
    <dependency>
      <groupId>org.junit.jupiter</groupId>
      <artifactId>junit-jupiter</artifactId>
      <version>5.11.3</version>
      <scope>test</scope>
    </dependency>
    <dependency>
      <groupId>com.google.code.gson</groupId>
      <artifactId>gson</artifactId>
      <version>2.11.0</version>
      <scope>test</scope>
    </dependency>
    <dependency>
      <groupId>org.jspecify</groupId>
      <artifactId>jspecify</artifactId>
      <version>1.0.0</version>
      <scope>provided</scope>
    </dependency>
  </dependencies>
</project>
EOF
# planted: off-by-one in Attributes.Dataset's iterator: "data-name" now yields the key "-name", so
# element.dataset().get("name") is null (fails ElementTest.dataset and AttributesTest.html)
sed -i '650s/attr.getKey().substring(dataPrefix.length())/attr.getKey().substring(dataPrefix.length() - 1)/' \
    src/main/java/org/jsoup/nodes/Attributes.java
mvn -o -B test > "$OUT/test-maven-surefire-jsoup.txt" 2>&1 || true

# --- step 2: npm run build in an npm-workspaces monorepo of markdown-it packages (all MIT) ------
# Seven npm packages that ship their ESM sources, unpacked as workspaces; each is built by
# `webpack --progress` (webpack 5.113.0, webpack-cli 5.1.4) with a small production UMD config of
# ours. `npm run build --workspaces` goes on after a failing workspace, so the failure lands
# second of seven, in the middle of the log.
M=$W/web/mono
rm -rf "$M" && mkdir -p "$M/packages" && cd "$M"
for p in linkify-it@5.0.0 markdown-it@14.1.0 markdown-it-container@4.0.0 markdown-it-emoji@3.0.0 \
         markdown-it-footnote@4.0.0 mdurl@2.0.0 uc.micro@2.1.0; do
  t=$(npm pack "$p" 2>/dev/null | tail -1)
  mkdir -p "packages/${p%@*}" && tar xzf "$t" -C "packages/${p%@*}" --strip-components=1
done
cat > package.json <<'EOF'
{
  "name": "markdown-stack",
  "private": true,
  "workspaces": ["packages/*"],
  "scripts": {
    "build": "npm run build --workspaces"
  },
  "devDependencies": {
    "webpack": "^5.0.0",
    "webpack-cli": "^5.0.0"
  }
}
EOF
# every workspace: "build": "webpack --progress", no devDependencies, a webpack.config.cjs
node - <<'EOF'
const fs=require('fs');const path=require('path');
const globals={'linkify-it':'linkifyit','markdown-it':'markdownit','markdown-it-container':'markdownitContainer','markdown-it-emoji':'markdownitEmoji','markdown-it-footnote':'markdownitFootnote','mdurl':'mdurl','uc.micro':'ucmicro'};
for (const d of fs.readdirSync('packages')) {
  const f=path.join('packages',d,'package.json');const p=JSON.parse(fs.readFileSync(f));
  p.scripts={build:'webpack --progress'}; delete p.devDependencies;
  fs.writeFileSync(f, JSON.stringify(p,null,2)+'\n');
  const exp = ['markdown-it','markdown-it-container','markdown-it-footnote'].includes(d);
  fs.writeFileSync(path.join('packages',d,'webpack.config.cjs'),
`// production UMD bundle built from the package's ESM sources
const path = require('path');
module.exports = {
  mode: 'production',
  entry: './index.mjs',
  output: {
    path: path.resolve(__dirname, 'bundle'),
    filename: '${d}.min.js',
    library: { name: '${globals[d]}', type: 'umd',${exp ? " export: 'default'" : ''} },
    globalObject: 'this',
  },
};
`);
}
EOF
npm install --no-audit --no-fund
# planted: a relative import one directory level short (as if html_block.mjs had been moved)
sed -i "3s|from '../common/html_blocks.mjs'|from './common/html_blocks.mjs'|" \
    packages/markdown-it/lib/rules_block/html_block.mjs
npm run build > "$OUT/lint-webpack-build-missing-import.txt" 2>&1 || true

# --- step 3: a real docker build (BuildKit, plain progress) with a failing wheel build ---------
# No Docker Hub here: Debian's docker.io (20.10.24) gives dockerd + a BuildKit-capable CLI, and
# debootstrap + `docker import` make the base image from Debian's mirror. The containers reach
# Debian's mirror for apt-get; pip runs fully offline from vendor/ (PyPI's TLS is not trusted
# inside the image), so setuptools/wheel/packaging wheels are vendored too.
DEBIAN_FRONTEND=noninteractive apt-get install -y docker.io debootstrap
mkdir -p "$W/docker-root"
setsid nohup /usr/sbin/dockerd --data-root "$W/docker-root" --host unix:///var/run/docker.sock \
    > "$W/dockerd.log" 2>&1 &
echo $! > "$W/dockerd.pid"; sleep 8
debootstrap --variant=minbase bookworm "$W/rootfs" http://deb.debian.org/debian
tar -C "$W/rootfs" -c . | /usr/bin/docker import - bookworm-local:base

D=$W/dock
rm -rf "$D" && mkdir -p "$D/vendor" "$D/agent" && cd "$D/vendor"
pip download --no-deps --no-binary :all: psutil==7.2.2 markupsafe==3.0.4 pyrsistent==0.20.0 \
    simplejson==4.3.0 wrapt==2.5.2        # BSD-3, BSD-3, MIT, MIT, BSD-2
pip download --no-deps --only-binary :all: setuptools==84.2.1 wheel==0.48.0 packaging==26.4
# planted: "our psutil patch" reads a struct sysinfo field that does not exist
tar xzf psutil-7.2.2.tar.gz && rm psutil-7.2.2.tar.gz
sed -i 's|        info.bufferram,  // buffer|        info.cachedram,  // buffer (page cache)|' \
    psutil-7.2.2/psutil/arch/linux/mem.c
tar czf psutil-7.2.2.tar.gz psutil-7.2.2 && rm -rf psutil-7.2.2
cd "$D"
cat > agent/__main__.py <<'EOF'
"""Tiny host-metrics agent: prints one JSON line of memory/CPU figures every 10 s."""
import json, time
import psutil, simplejson  # noqa: F401  (simplejson for fast dumps in production)

while True:
    vm = psutil.virtual_memory()
    print(json.dumps({"mem_used": vm.used, "mem_total": vm.total, "cpu": psutil.cpu_percent(interval=None)}), flush=True)
    time.sleep(10)
EOF
printf '%s\n' markupsafe==3.0.4 psutil==7.2.2 pyrsistent==0.20.0 simplejson==4.3.0 wrapt==2.5.2 \
    > requirements.txt
# The bug the case is about: the for-loop keeps going after `pip wheel` fails for psutil and
# exits with the last iteration's status, so the step passes and the failure surfaces only at the
# final `pip install` ("No matching distribution found for psutil==7.2.2").
cat > Dockerfile <<'EOF'
FROM bookworm-local:base AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc libc6-dev python3-dev python3-venv ca-certificates
WORKDIR /src
COPY vendor/ vendor/
# wheels for the vendored sdists (psutil carries our mem.c patch)
# (no index in CI: build backends come from vendor/ too)
RUN python3 -m venv /opt/venv \
 && /opt/venv/bin/pip install --no-index --find-links=vendor/ -U setuptools wheel \
 && for sdist in vendor/*.tar.gz; do /opt/venv/bin/pip wheel -v --no-deps --no-build-isolation -w /wheels "$sdist"; done
COPY requirements.txt .
RUN /opt/venv/bin/pip install --no-index --find-links=/wheels -r requirements.txt

FROM bookworm-local:base
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /opt/venv /opt/venv
COPY agent/ /app/agent/
WORKDIR /app
CMD ["/opt/venv/bin/python", "-m", "agent"]
EOF
/usr/bin/docker builder prune -af      # a cold build: both apt-get steps print in full
DOCKER_BUILDKIT=1 /usr/bin/docker build --progress=plain -t metrics-agent . \
    > "$OUT/lint-docker-build-psutil-sysinfo.txt" 2>&1 || true
# stop the daemon this script started
kill "$(cat "$W/dockerd.pid")"
