/** nginx as the reference: one worker on the server core, sendfile, no auth, no access log. */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CPUS, pinned } from "./tools";

export async function startNginx(dir: string, root: string, port: number) {
  mkdirSync(join(dir, "tmp"), { recursive: true });
  const conf = join(dir, "nginx.conf");
  writeFileSync(
    conf,
    `daemon off;
worker_processes 1;
pid ${join(dir, "nginx.pid")};
error_log ${join(dir, "error.log")} warn;
events { worker_connections 1024; }
http {
  types { application/json json; application/jose sig; }
  default_type application/octet-stream;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 1000000;
  access_log off;
  client_body_temp_path ${join(dir, "tmp")};
  proxy_temp_path ${join(dir, "tmp")};
  fastcgi_temp_path ${join(dir, "tmp")};
  uwsgi_temp_path ${join(dir, "tmp")};
  scgi_temp_path ${join(dir, "tmp")};
  server {
    listen 127.0.0.1:${port};
    root ${root};
  }
}
`,
  );
  const proc = Bun.spawn(pinned(CPUS.server, ["/usr/sbin/nginx", "-c", conf, "-e", join(dir, "error.log")]), { stdout: "ignore", stderr: "inherit" });
  for (let i = 0; i < 200; i++) {
    try {
      await fetch(`http://127.0.0.1:${port}/`);
      return { url: `http://127.0.0.1:${port}`, stop: async () => (proc.kill("SIGQUIT"), await proc.exited) };
    } catch {
      await Bun.sleep(25);
    }
  }
  proc.kill();
  throw new Error("nginx did not start");
}
