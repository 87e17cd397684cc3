#include <jansson.h>
#include <string.h>

#include "check.h"
#include "xform.h"

static int ok(const char *js)
{
    char err[256];
    json_t *j = json_loads(js, 0, NULL);
    int rc = xform_check(j, err, sizeof(err));
    json_decref(j);
    return rc == 0;
}

int main(void)
{
    CHECK(ok("{\"command\": [\"python3\", \"/srv/t.py\", \"--fast\"]}"));
    CHECK(ok("{\"command\": [\"/bin/cat\"]}"));
    CHECK(ok("{\"url\": \"http://127.0.0.1:9000/\"}"));
    CHECK(ok("{\"url\": \"https://xform.svc:8443/resize\"}"));
    CHECK(!ok("{}"));
    CHECK(!ok("[]"));
    CHECK(!ok("{\"command\": [\"/bin/cat\"], \"url\": \"http://h/\"}"));
    CHECK(!ok("{\"command\": []}"));
    CHECK(!ok("{\"command\": \"/bin/cat\"}"));
    CHECK(!ok("{\"command\": [\"\"]}"));
    CHECK(!ok("{\"command\": [\"/bin/cat\", 3]}"));
    CHECK(!ok("{\"command\": [\"./run.sh\"]}"));   /* relative: it runs elsewhere */
    CHECK(ok("{\"command\": [\"python3\", \"x.py\"]}"));   /* a name, from PATH */
    CHECK(!ok("{\"command\": [\"/bin/c\\u0000at\"]}"));
    CHECK(!ok("{\"url\": \"ftp://h/\"}"));
    CHECK(!ok("{\"url\": \"http://user:pw@h/\"}"));
    CHECK(!ok("{\"url\": \"http://h/?a=b\"}"));
    CHECK(!ok("{\"url\": \"http:///x\"}"));
    CHECK(!ok("{\"url\": \"http://h/\", \"comand\": [\"x\"]}"));
    char many[2048] = "{\"command\": [\"a\"";
    for (int i = 0; i < 70; i++)
        strcat(many, ", \"x\"");
    strcat(many, "]}");
    CHECK(!ok(many));
    CHECK(xform_valid_name("resize-256", 10) && !xform_valid_name("a/b", 3) &&
          !xform_valid_name("", 0));
    /* arguments as a query carries them */
    CHECK(xform_args_ok("size=224x224&fmt=a%20b+c", 24) && xform_args_ok("", 0));
    CHECK(!xform_args_ok("a b", 3) && !xform_args_ok("a=\"x\"", 5) &&
          !xform_args_ok("a\r\nX: y", 8) && !xform_args_ok("a#b", 3));
    char big[XFORM_QUERY_MAX + 2];
    memset(big, 'a', sizeof(big));
    CHECK(xform_args_ok(big, XFORM_QUERY_MAX) && !xform_args_ok(big, XFORM_QUERY_MAX + 1));
    json_t *spec = json_loads("{\"url\": \"http://h:1/\"}", 0, NULL);
    json_t *pub = xform_public("id", spec);
    CHECK(!strcmp(json_string_value(json_object_get(pub, "name")), "id") &&
          !strcmp(json_string_value(json_object_get(pub, "url")), "http://h:1/") &&
          !json_object_get(spec, "name"));
    json_decref(pub);
    json_decref(spec);
    return check_done("test_xform");
}
