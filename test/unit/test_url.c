/* Unit tests for common/url.c. */
#include <string.h>

#include "check.h"
#include "url.h"

static void test_url_split(void)
{
    char host[64];
    int p;
    const char *path;
    CHECK(url_split("http://127.0.0.1:8080/a?b=c", host, sizeof(host), &p, &path) == 0 &&
          !strcmp(host, "127.0.0.1") && p == 8080 && !strcmp(path, "/a?b=c"));
    CHECK(url_split("http://example.org", host, sizeof(host), &p, &path) == 0 &&
          !strcmp(host, "example.org") && p == 80 && !strcmp(path, "/"));
    CHECK(url_split("http://[::1]:9/x", host, sizeof(host), &p, &path) == 0 &&
          !strcmp(host, "::1") && p == 9 && !strcmp(path, "/x"));
    CHECK(url_split("http://h?q", host, sizeof(host), &p, &path) == 0 && !strcmp(path, "?q"));
    CHECK(url_split("https://h.example:8443/p", host, sizeof(host), &p, &path) == 0 &&
          !strcmp(host, "h.example") && p == 8443 && !strcmp(path, "/p"));
    CHECK(url_split("https://[::1]", host, sizeof(host), &p, &path) == 0 &&
          !strcmp(host, "::1") && p == 443 && !strcmp(path, "/"));
    CHECK(url_is_https("https://h/") && !url_is_https("http://h/") && !url_is_https("HTTPS:/"));
    const char *bad[] = {"httpss://h/", "https:/h", "ftp://h", "http://", "http://:80/", "http://h:0/",
                         "http://h:65536/", "http://h:8x/", "http://u@h/", "http://[::1/",
                         "http://[::1]x/", "http://h/#frag", "http://h:/"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        CHECK(url_split(bad[i], host, sizeof(host), &p, &path) == -1);
    CHECK(url_split("http://a-rather-long-host-name-that-does-not-fit.example.org/", host, 16,
                       &p, &path) == -1);
}

int main(void)
{
    test_url_split();
    return check_done("test_url");
}
