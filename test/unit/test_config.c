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

/* path (made if missing) holding text, with mode. */
static void put_file(const char *path, const char *text, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0);
    CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
    CHECK(chmod(path, mode) == 0);
}

/* auth_keys_file: lines or a JSON array, added to auth_keys, from a file
 * only the daemon's user may read; --auth_keys on the command line is
 * marked for the warning at start, the config file's is not. */
static void keys_file(struct conf *c, char *err)
{
    char path[] = "/tmp/shoal-unit-keys-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    put_file(path, "# client keys\n\nAK1:secret-one\r\n  AK2:sec:two  \n\t# AK9:no\nAK3:s3,AK4:s4",
             0600);
    CHECK(load(c, err, 3, "--auth_keys_file", path) == 0);
    CHECK(c->n_auth_keys == 4 && !c->auth_keys_argv);
    CHECK(!strcmp(c->auth_keys[0], "AK1:secret-one") && !strcmp(c->auth_keys[1], "AK2:sec:two"));
    CHECK(!strcmp(c->auth_keys[3], "AK4:s4"));
    conf_free(c);
    /* merged with auth_keys: the option's first */
    CHECK(load(c, err, 5, "--auth_keys", "CLI:x", "--auth_keys_file", path) == 0);
    CHECK(c->n_auth_keys == 5 && !strcmp(c->auth_keys[0], "CLI:x") && c->auth_keys_argv);
    conf_free(c);
    CHECK(load(c, err, 5, "--auth_keys", "AK2:other", "--auth_keys_file", path) == -1 &&
          strstr(err, "'AK2' is given twice"));
    conf_free(c);
    CHECK(load(c, err, 3, "--s3-api-keys", "A:B") == 0 && c->auth_keys_argv);
    conf_free(c);
    CHECK(load(c, err, 3, "--auth_keys", "") == 0 && !c->auth_keys_argv);
    conf_free(c);
    /* the JSON array form */
    put_file(path, "  [\"J1:x\", \"J2:y\"]\n", 0400);
    CHECK(load(c, err, 3, "--auth_keys_file", path) == 0);
    CHECK(c->n_auth_keys == 2 && !strcmp(c->auth_keys[1], "J2:y"));
    conf_free(c);
    /* refused: the message names the line or element, never quotes it */
    static const struct {
        const char *text, *want;
    } bad[] = {
        {"[\"J1:x\", 3]", "element 1"},
        {"[\"J1:x\",", "JSON array"},
        {"AK1:fine\nnocolon-secret\n", "line 2"},
        {"AK1:\n", "line 1"},
        {"AK1:a,,AK2:b\n", "line 1"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        put_file(path, bad[i].text, 0600);
        CHECK(load(c, err, 3, "--auth_keys_file", path) == -1 && strstr(err, bad[i].want) &&
              !strstr(err, "secret") && !strstr(err, "AK1"));
        conf_free(c);
    }
    put_file(path, "# nothing yet\n", 0600);
    CHECK(load(c, err, 3, "--auth_keys_file", path) == 0 && c->n_auth_keys == 0);
    conf_free(c);
    /* others may not read it, nor may another user own it */
    put_file(path, "AK1:secret-one\n", 0644);
    CHECK(load(c, err, 3, "--auth_keys_file", path) == -1 && strstr(err, "chmod 600") &&
          strstr(err, path) && !strstr(err, "secret-one"));
    conf_free(c);
    CHECK(chmod(path, 0620) == 0);
    CHECK(load(c, err, 3, "--auth_keys_file", path) == -1 && strstr(err, "chmod 600"));
    conf_free(c);
    if (geteuid() == 0) {
        CHECK(chmod(path, 0600) == 0 && chown(path, 4242, (gid_t)-1) == 0);
        CHECK(load(c, err, 3, "--auth_keys_file", path) == -1 && strstr(err, "chown 0 "));
        conf_free(c);
    }
    /* named in a config file, inline keys there too: merged, no warning */
    char cpath[] = "/tmp/shoal-unit-conf-XXXXXX";
    fd = mkstemp(cpath);
    CHECK(fd >= 0);
    close(fd);
    char text[256];
    snprintf(text, sizeof(text), "{\"auth_keys\": [\"F:1\"], \"auth_keys_file\": \"%s\"}", path);
    put_file(cpath, text, 0600);
    put_file(path, "AK1:secret-one\n", 0600);
    CHECK(chown(path, geteuid(), (gid_t)-1) == 0);
    CHECK(load(c, err, 3, "--config", cpath) == 0 && c->n_auth_keys == 2 && !c->auth_keys_argv);
    conf_free(c);
    unlink(cpath);
    unlink(path);
    CHECK(load(c, err, 3, "--auth_keys_file", path) == -1 && strstr(err, "auth_keys_file") &&
          strstr(err, path));
    conf_free(c);
    CHECK(load(c, err, 3, "--auth_keys_file", "/tmp") == -1 && strstr(err, "not a regular"));
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
    keys_file(&c, err);
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
