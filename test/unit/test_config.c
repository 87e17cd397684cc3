#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "config.h"

static int load(struct conf *c, char *err, int argc, ...)
{
    char *argv[16] = {"prog"};
    va_list ap;
    va_start(ap, argc);
    for (int i = 1; i < argc; i++)
        argv[i] = va_arg(ap, char *);
    va_end(ap);
    return conf_load(c, argc, argv, err, 256);
}

/* The cluster secret is read from a file that only its owner may read. */
static void secret_file(struct conf *c, char *err)
{
    char path[] = "/tmp/shoal-unit-secret-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    const char *text = "0123456789abcdef0123456789abcdef\n";
    CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
    CHECK(chmod(path, 0600) == 0);
    CHECK(load(c, err, 3, "--cluster_secret_file", path) == 0);
    CHECK(c->cluster_secret && !strcmp(c->cluster_secret, "0123456789abcdef0123456789abcdef"));
    conf_free(c);
    CHECK(chmod(path, 0640) == 0);
    CHECK(load(c, err, 3, "--cluster_secret_file", path) == -1 && strstr(err, "chmod 600"));
    conf_free(c);
    fd = open(path, O_WRONLY | O_TRUNC);
    CHECK(write(fd, "short\n", 6) == 6);
    close(fd);
    CHECK(chmod(path, 0400) == 0);
    CHECK(load(c, err, 3, "--cluster_secret_file", path) == -1 && strstr(err, "at least"));
    conf_free(c);
    unlink(path);
    CHECK(load(c, err, 3, "--cluster_secret_file", path) == -1 && strstr(err, path));
    conf_free(c);
}

int main(void)
{
    struct conf c;
    char err[256];

    CHECK(load(&c, err, 1) == 0);
    CHECK(c.port == 8080 && c.workers == 2 && c.fsync == 1);
    CHECK(c.mpu_expire_h == 168);
    CHECK(!strcmp(c.public_url, "http://127.0.0.1:8080"));
    conf_free(&c);

    /* a decimal option */
    CHECK(load(&c, err, 3, "--mpu_expire_h", "0.25") == 0 && c.mpu_expire_h == 0.25);
    conf_free(&c);
    CHECK(load(&c, err, 3, "--mpu_expire_h", "1e1") == 0 && c.mpu_expire_h == 10);
    conf_free(&c);
    CHECK(load(&c, err, 3, "--mpu_expire_h", "x") == -1 && strstr(err, "not a number"));
    conf_free(&c);
    CHECK(load(&c, err, 3, "--mpu_expire_h", "2h") == -1 && strstr(err, "not a number"));
    conf_free(&c);
    CHECK(load(&c, err, 3, "--mpu_expire_h", "-1") == -1 && strstr(err, "out of range"));
    conf_free(&c);
    CHECK(load(&c, err, 3, "--mpu_expire_h", "nan") == -1);
    conf_free(&c);
    CHECK(load(&c, err, 3, "--mpu_expire_h", "") == -1);
    conf_free(&c);

    CHECK(load(&c, err, 6, "--port", "9001", "--fsync=false", "--mountpaths", "/a,/b") == 0);
    CHECK(c.port == 9001 && c.fsync == 0 && c.n_mountpaths == 2 &&
          !strcmp(c.mountpaths[1], "/b"));
    conf_free(&c);

    CHECK(load(&c, err, 3, "--port", "70000") == -1 && strstr(err, "out of range"));
    conf_free(&c);
    CHECK(load(&c, err, 3, "--port", "80x") == -1 && strstr(err, "not a whole number"));
    conf_free(&c);
    CHECK(load(&c, err, 3, "--colour", "red") == -1 && strstr(err, "unknown option"));
    conf_free(&c);
    CHECK(load(&c, err, 3, "--fsync", "maybe") == -1 && strstr(err, "true or false"));
    conf_free(&c);
    CHECK(load(&c, err, 2, "--port") == -1 && strstr(err, "needs a value"));
    conf_free(&c);
    CHECK(load(&c, err, 3, "--mountpaths", "/a,,/b") == -1 && strstr(err, "empty element"));
    conf_free(&c);
    CHECK(load(&c, err, 3, "--log-level", "loud") == -1 && strstr(err, "log_level"));
    conf_free(&c);

    /* a JSON file, overridden by flags */
    char path[] = "/tmp/shoal-conf-XXXXXX";
    int fd = mkstemp(path);
    const char *text = "{\"port\": 9100, \"workers\": 4, \"mountpaths\": [\"/x\"],"
                       " \"fsync\": false}";
    CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
    CHECK(load(&c, err, 5, "--config", path, "--workers", "3") == 0);
    CHECK(c.port == 9100 && c.workers == 3 && c.fsync == 0 && c.n_mountpaths == 1);
    conf_free(&c);

    fd = open(path, O_WRONLY | O_TRUNC);
    text = "{\"port\": \"9100\"}";
    CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
    CHECK(load(&c, err, 3, "--config", path) == -1 && strstr(err, "must be an integer"));
    conf_free(&c);

    fd = open(path, O_WRONLY | O_TRUNC);
    text = "{\"port\": 91,";
    CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
    CHECK(load(&c, err, 3, "--config", path) == -1 && strstr(err, "line"));
    conf_free(&c);
    unlink(path);

    /* whole-line # comments; a # inside a value is the value's */
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    text = "# a comment\n{\n  # the port\n  \"port\": 9200,\n\t# \"port\": 1,\n"
           "  \"host\": \"#h\"\n}\n";
    CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
    CHECK(load(&c, err, 3, "--config", path) == 0);
    CHECK(c.port == 9200 && !strcmp(c.host, "#h"));
    conf_free(&c);
    fd = open(path, O_WRONLY | O_TRUNC);
    text = "# one\n# two\n{\"port\": 1,\n}\n";   /* the error's line counts the comments */
    CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
    CHECK(load(&c, err, 3, "--config", path) == -1 && strstr(err, "line 4"));
    conf_free(&c);
    unlink(path);

    CHECK(load(&c, err, 3, "--config", "/nonexistent/shoal.json") == -1);
    conf_free(&c);

    secret_file(&c, err);
    /* s3_api_keys is another name of auth_keys */
    CHECK(load(&c, err, 3, "--s3_api_keys", "AK:SK,AK2:SK2") == 0);
    CHECK(c.n_auth_keys == 2 && !strcmp(c.auth_keys[1], "AK2:SK2"));
    conf_free(&c);
    CHECK(load(&c, err, 5, "--auth_keys", "A:B", "--header_timeout_s", "0") == -1);
    conf_free(&c);
    /* a secret is no command-line option */
    CHECK(load(&c, err, 3, "--cluster_secret", "0123456789abcdef0") == -1 &&
          strstr(err, "unknown option"));
    conf_free(&c);
    return check_done("test_config");
}
