/* ferrometal's test image binary: a static, libc-only helper for pods on a test node, where no
 * image can be pulled and there is no shell. Packaged by scripts/install-node.sh as the image
 * ferrometal.local/probe:1 with entrypoint /probe.
 *
 *   probe echo WORDS...        print WORDS on one line, exit 0
 *   probe exit CODE [WORDS...] print WORDS (if any), exit CODE
 *   probe sleep SECONDS        sleep, then exit 0 (0: forever)
 *   probe serve PORT [TEXT]    TCP server: answers every connection with TEXT (default: the
 *                              hostname) and a newline, forever
 *   probe get HOST PORT        connect to HOST:PORT (a dotted IPv4 address or a name resolved
 *                              through /etc/resolv.conf), print what it answers, exit 0 on success
 *   probe resolve NAME         resolve NAME (A record, search domains of /etc/resolv.conf
 *                              applied to names with fewer than ndots dots), print the address
 *
 * Name resolution is done here over UDP, without glibc's NSS: a static binary cannot load it. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static int usage(void) {
  fprintf(stderr, "usage: probe echo|exit|sleep|serve|get|resolve ...\n");
  return 2;
}

static void print_words(int n, char **w) {
  for (int i = 0; i < n; i++) printf(i ? " %s" : "%s", w[i]);
  printf("\n");
  fflush(stdout);
}

/* One DNS A query for the fully qualified NAME to SERVER; 0 and *out on an answer. */
static int dns_query(const char *name, struct in_addr server, struct in_addr *out) {
  unsigned char q[512], r[512];
  size_t n = 0;
  unsigned short id = (unsigned short)(getpid() ^ time(NULL));
  q[n++] = id >> 8; q[n++] = id & 0xff;
  q[n++] = 0x01; q[n++] = 0x00;             /* recursion desired */
  q[n++] = 0; q[n++] = 1;                   /* one question */
  memset(q + n, 0, 6); n += 6;
  const char *p = name;
  while (*p) {
    const char *dot = strchr(p, '.');
    size_t len = dot ? (size_t)(dot - p) : strlen(p);
    if (len == 0 || len > 63 || n + len + 6 > sizeof q) return -1;
    q[n++] = (unsigned char)len;
    memcpy(q + n, p, len); n += len;
    p += len;
    if (*p == '.') p++;
  }
  q[n++] = 0;
  q[n++] = 0; q[n++] = 1;                   /* type A */
  q[n++] = 0; q[n++] = 1;                   /* class IN */

  int s = socket(AF_INET, SOCK_DGRAM, 0);
  if (s < 0) return -1;
  struct timeval tv = {2, 0};
  setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(53), .sin_addr = server};
  int rc = -1;
  for (int attempt = 0; attempt < 3 && rc < 0; attempt++) {
    if (sendto(s, q, n, 0, (struct sockaddr *)&sa, sizeof sa) < 0) break;
    ssize_t got = recv(s, r, sizeof r, 0);
    if (got < 12 || r[0] != q[0] || r[1] != q[1]) continue;
    int rcode = r[3] & 0x0f, an = (r[6] << 8) | r[7];
    if (rcode != 0 || an == 0) break;       /* NXDOMAIN and friends: a real answer */
    size_t i = n;                           /* the question is echoed: skip it */
    while (an-- > 0 && i + 12 <= (size_t)got) {
      if ((r[i] & 0xc0) == 0xc0) i += 2; else { while (i < (size_t)got && r[i]) i += r[i] + 1; i++; }
      if (i + 10 > (size_t)got) break;
      int type = (r[i] << 8) | r[i + 1], rdlen = (r[i + 8] << 8) | r[i + 9];
      i += 10;
      if (type == 1 && rdlen == 4 && i + 4 <= (size_t)got) { memcpy(out, r + i, 4); rc = 0; break; }
      i += rdlen;
    }
    break;
  }
  close(s);
  return rc;
}

static int resolve(const char *name, struct in_addr *out) {
  if (inet_pton(AF_INET, name, out) == 1) return 0;
  struct in_addr server = {0};
  char search[8][256];
  int nsearch = 0, ndots = 1, have_server = 0;
  FILE *f = fopen("/etc/resolv.conf", "r");
  if (f) {
    char line[1024];
    while (fgets(line, sizeof line, f)) {
      char *tok = strtok(line, " \t\n");
      if (!tok) continue;
      if (!strcmp(tok, "nameserver") && !have_server) {
        char *a = strtok(NULL, " \t\n");
        if (a && inet_pton(AF_INET, a, &server) == 1) have_server = 1;
      } else if (!strcmp(tok, "search")) {
        char *d;
        while ((d = strtok(NULL, " \t\n")) && nsearch < 8) snprintf(search[nsearch++], 256, "%s", d);
      } else if (!strcmp(tok, "options")) {
        char *o;
        while ((o = strtok(NULL, " \t\n")))
          if (!strncmp(o, "ndots:", 6)) ndots = atoi(o + 6);
      }
    }
    fclose(f);
  }
  if (!have_server) { fprintf(stderr, "probe: no nameserver in /etc/resolv.conf\n"); return -1; }
  size_t len = strlen(name);
  int dots = 0;
  for (const char *c = name; *c; c++) dots += *c == '.';
  if (len && name[len - 1] == '.') {
    char fq[256];
    snprintf(fq, sizeof fq, "%.*s", (int)len - 1, name);
    return dns_query(fq, server, out);
  }
  if (dots >= ndots && dns_query(name, server, out) == 0) return 0;
  for (int i = 0; i < nsearch; i++) {
    char fq[512];
    snprintf(fq, sizeof fq, "%.250s.%.250s", name, search[i]);
    if (dns_query(fq, server, out) == 0) return 0;
  }
  if (dots < ndots && dns_query(name, server, out) == 0) return 0;
  return -1;
}

static int serve(int port, const char *text) {
  char host[256] = "";
  if (!text) { gethostname(host, sizeof host); text = host; }
  int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_ANY)};
  if (s < 0 || bind(s, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(s, 16) < 0) {
    perror("probe serve");
    return 1;
  }
  printf("serving on port %d\n", port);
  fflush(stdout);
  for (;;) {
    int c = accept(s, NULL, NULL);
    if (c < 0) continue;
    dprintf(c, "%s\n", text);
    close(c);
  }
}

static int get(const char *host, int port) {
  struct in_addr addr;
  if (resolve(host, &addr) < 0) { fprintf(stderr, "probe: cannot resolve %s\n", host); return 1; }
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct timeval tv = {5, 0};
  setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr = addr};
  if (connect(s, (struct sockaddr *)&sa, sizeof sa) < 0) {
    fprintf(stderr, "probe: connect %s:%d: %s\n", inet_ntoa(addr), port,
            errno == EINPROGRESS || errno == EAGAIN ? "timed out" : strerror(errno));
    return 1;
  }
  char buf[4096];
  ssize_t n, total = 0;
  while ((n = read(s, buf, sizeof buf)) > 0) { fwrite(buf, 1, n, stdout); total += n; }
  close(s);
  return total > 0 ? 0 : 1;
}

int main(int argc, char **argv) {
  if (argc < 2) return usage();
  const char *cmd = argv[1];
  if (!strcmp(cmd, "echo")) { print_words(argc - 2, argv + 2); return 0; }
  if (!strcmp(cmd, "exit") && argc >= 3) {
    if (argc > 3) print_words(argc - 3, argv + 3);
    return atoi(argv[2]);
  }
  if (!strcmp(cmd, "sleep") && argc == 3) {
    int secs = atoi(argv[2]);
    if (secs <= 0) for (;;) pause();
    sleep(secs);
    return 0;
  }
  if (!strcmp(cmd, "serve") && argc >= 3) return serve(atoi(argv[2]), argc > 3 ? argv[3] : NULL);
  if (!strcmp(cmd, "get") && argc == 4) return get(argv[2], atoi(argv[3]));
  if (!strcmp(cmd, "resolve") && argc == 3) {
    struct in_addr a;
    if (resolve(argv[2], &a) < 0) { fprintf(stderr, "probe: cannot resolve %s\n", argv[2]); return 1; }
    printf("%s\n", inet_ntoa(a));
    return 0;
  }
  return usage();
}
