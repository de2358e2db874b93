// The bind fence: pins every wildcard listen address of a process to one address.
//
// TensorFlow's gRPC servers (MultiWorkerMirroredStrategy, ParameterServerStrategy, the
// tf.data service) always listen on every interface ("[::]:port" / "0.0.0.0:port"), with
// no authentication: anyone who reaches that port can run TensorFlow ops as the worker's
// user. TensorFlow has no setting for the listen address. The launcher's workers are
// started with this library in LD_PRELOAD (tensorflow_ignite.launcher.fence), and its
// bind() turns a wildcard address into the one in $TF_IGNITE_BIND_FENCE -- the address
// the worker advertises in TF_CONFIG, or the operator's choice -- before calling libc's.
//
//   * AF_INET 0.0.0.0       -> the fence's IPv4 address (an IPv6 fence: refused);
//   * AF_INET6 ::           -> the fence's IPv6 address, or ::ffff:a.b.c.d for an IPv4
//                              fence (gRPC's dual-stack listener accepts the mapped form);
//   * every other address is passed through unchanged (a worker may still bind 127.0.0.1).
//
// A fence that cannot be honoured fails the bind (EADDRNOTAVAIL) rather than widening it.
// Plain C ABI, libc and libdl only: it is loaded into every process of a job (python,
// shells, whatever the job starts), so it must load anywhere and cost nothing.

#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

namespace {

using BindFn = int (*)(int, const struct sockaddr*, socklen_t);

struct Fence {
  bool active = false;   // $TF_IGNITE_BIND_FENCE held an address
  bool has_v4 = false;   // ... an IPv4 one (then v6 is its mapped form)
  struct in_addr v4 {};
  struct in6_addr v6 {};
};

Fence g_fence;
BindFn g_real_bind = nullptr;
pthread_once_t g_once = PTHREAD_ONCE_INIT;

void Init() {
  g_real_bind = reinterpret_cast<BindFn>(dlsym(RTLD_NEXT, "bind"));
  const char* value = getenv("TF_IGNITE_BIND_FENCE");
  if (value == nullptr || *value == '\0') return;
  if (inet_pton(AF_INET, value, &g_fence.v4) == 1) {
    g_fence.active = g_fence.has_v4 = true;
    memset(&g_fence.v6, 0, sizeof g_fence.v6);
    g_fence.v6.s6_addr[10] = 0xff;
    g_fence.v6.s6_addr[11] = 0xff;
    memcpy(&g_fence.v6.s6_addr[12], &g_fence.v4, 4);
  } else if (inet_pton(AF_INET6, value, &g_fence.v6) == 1) {
    g_fence.active = true;
  }
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int bind(int fd, const struct sockaddr* addr,
                                                           socklen_t len) {
  pthread_once(&g_once, Init);
  if (g_real_bind == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  if (!g_fence.active || addr == nullptr) return g_real_bind(fd, addr, len);
  if (addr->sa_family == AF_INET && len >= static_cast<socklen_t>(sizeof(struct sockaddr_in))) {
    struct sockaddr_in in;
    memcpy(&in, addr, sizeof in);
    if (in.sin_addr.s_addr != htonl(INADDR_ANY)) return g_real_bind(fd, addr, len);
    if (!g_fence.has_v4) {
      errno = EADDRNOTAVAIL;  // an IPv6 fence cannot hold an IPv4 socket: refuse, never widen
      return -1;
    }
    in.sin_addr = g_fence.v4;
    return g_real_bind(fd, reinterpret_cast<struct sockaddr*>(&in), sizeof in);
  }
  if (addr->sa_family == AF_INET6 && len >= static_cast<socklen_t>(sizeof(struct sockaddr_in6))) {
    struct sockaddr_in6 in6;
    memcpy(&in6, addr, sizeof in6);
    if (!IN6_IS_ADDR_UNSPECIFIED(&in6.sin6_addr)) return g_real_bind(fd, addr, len);
    in6.sin6_addr = g_fence.v6;
    return g_real_bind(fd, reinterpret_cast<struct sockaddr*>(&in6), sizeof in6);
  }
  return g_real_bind(fd, addr, len);
}
