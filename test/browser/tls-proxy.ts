import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { makePrivateCa } from "../private-ca";

/** Debian's nginx, as .ci/run installs it: the TLS-terminating proxy docs/operating.md sets up. */
export const NGINX = "/usr/sbin/nginx";

export interface TlsProxy {
  /** `https://localhost:PORT`: the public origin, what keyturn's --base-url must say. */
  readonly url: string;
  /** The private CA that signed the proxy's certificate (PEM file). */
  readonly ca: string;
  /** Points the proxy at keyturn's plain-HTTP address (`http://127.0.0.1:PORT`) and starts it. */
  start(upstream: string): Promise<void>;
  stop(): Promise<void>;
}

async function accepting(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port }, () => {
      socket.end();
      resolve(true);
    });
    socket.on("error", () => resolve(false));
  });
}

/**
 * nginx terminating TLS on a free loopback port with a certificate of a private CA, in front of a
 * keyturn that speaks plain HTTP: the configuration of docs/operating.md ("Behind a TLS proxy"),
 * with nginx's default `Host` (the upstream's address), as a proxy that does not pass it on sends.
 */
export function tlsProxy(port: number): TlsProxy {
  const dir = mkdtempSync(join(tmpdir(), "keyturn-nginx-"));
  const { ca, cert, key } = makePrivateCa(dir);
  let proc: ReturnType<typeof Bun.spawn> | null = null;
  return {
    url: `https://localhost:${port}`,
    ca,
    async start(upstream) {
      for (const sub of ["body", "proxy", "fastcgi", "uwsgi", "scgi"]) mkdirSync(join(dir, sub), { recursive: true });
      const conf = join(dir, "nginx.conf");
      writeFileSync(
        conf,
        `daemon off;
master_process off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  server {
    listen 127.0.0.1:${port} ssl;
    server_name localhost;
    ssl_certificate ${cert};
    ssl_certificate_key ${key};
    location / {
      proxy_pass ${upstream};
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto https;
    }
  }
}
`,
      );
      proc = Bun.spawn([NGINX, "-p", dir, "-e", join(dir, "error.log"), "-c", conf], { stdin: "ignore", stdout: "ignore", stderr: "pipe" });
      // Started when its port accepts; an nginx that exits first (a bad configuration) says why.
      while (!(await accepting(port))) {
        if (proc.exitCode !== null) throw new Error(`nginx did not start:\n${readFileSync(join(dir, "error.log"), "utf8")}`);
        await Bun.sleep(20);
      }
    },
    async stop() {
      if (proc) {
        proc.kill("SIGTERM");
        await proc.exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
