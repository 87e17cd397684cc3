/*
 * s3acl: ACLs asked for, kept, shown and decided (see s3acl.h).
 *
 * Threads: any; nothing is shared (the user table is read only).
 */
#include "s3acl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http.h"
#include "s3.h"
#include "s3user.h"
#include "s3xml.h"
#include "util.h"

static const struct {
    const char *name;
    unsigned bits;
} perms[] = {
    {"READ", S3ACL_READ},           {"WRITE", S3ACL_WRITE},      {"READ_ACP", S3ACL_READ_ACP},
    {"WRITE_ACP", S3ACL_WRITE_ACP}, {"FULL_CONTROL", S3ACL_FULL},
};

/* The groups, by the last part of their URI (after S3ACL_GROUPS). */
static const struct {
    const char *name, *uri;
} groups[] = {
    {"AllUsers", S3ACL_GROUPS "global/AllUsers"},
    {"AuthenticatedUsers", S3ACL_GROUPS "global/AuthenticatedUsers"},
    {"LogDelivery", S3ACL_GROUPS "s3/LogDelivery"},
};

/* The grant header of each permission. */
static const struct {
    const char *header, *perm;
} grant_headers[] = {
    {"x-amz-grant-read", "READ"},           {"x-amz-grant-write", "WRITE"},
    {"x-amz-grant-read-acp", "READ_ACP"},   {"x-amz-grant-write-acp", "WRITE_ACP"},
    {"x-amz-grant-full-control", "FULL_CONTROL"},
};

static unsigned perm_bits(const char *p)
{
    for (size_t i = 0; p && i < ARRAY_LEN(perms); i++)
        if (!strcmp(p, perms[i].name))
            return perms[i].bits;
    return 0;
}

static const char *group_of_uri(const char *uri)
{
    for (size_t i = 0; i < ARRAY_LEN(groups); i++)
        if (!strcmp(uri, groups[i].uri))
            return groups[i].name;
    return NULL;
}

static int known_group(const char *g)
{
    for (size_t i = 0; g && i < ARRAY_LEN(groups); i++)
        if (!strcmp(g, groups[i].name))
            return 1;
    return 0;
}

/* Add a grant to a, once. */
static void add(json_t *a, const char *perm, const char *what, const char *who)
{
    size_t i;
    json_t *g;
    json_array_foreach(a, i, g)
        if (!strcmp(json_string_value(json_object_get(g, "perm")), perm) &&
            json_is_string(json_object_get(g, what)) &&
            !strcmp(json_string_value(json_object_get(g, what)), who))
            return;
    json_array_append_new(a, json_pack("{s:s, s:s}", "perm", perm, what, who));
}

json_t *s3acl_canned(const char *name, const char *owner, const char *bucket_owner)
{
    static const char *const known[] = {
        "private", "public-read", "public-read-write", "authenticated-read",
        "bucket-owner-read", "bucket-owner-full-control", "log-delivery-write",
        "aws-exec-read",
    };
    size_t k = 0;
    while (k < ARRAY_LEN(known) && strcmp(name, known[k]))
        k++;
    if (k == ARRAY_LEN(known))
        return NULL;
    /* in S3's order: the groups' grants, the owner's, the bucket owner's */
    json_t *a = json_array();
    const char *bo = bucket_owner ? bucket_owner : "";
    if ((k == 4 || k == 5) && !strcmp(bo, owner ? owner : ""))
        k = 0;                   /* the bucket's owner is the owner */
    switch (k) {
    case 1: add(a, "READ", "group", "AllUsers"); break;
    case 2:
        add(a, "READ", "group", "AllUsers");
        add(a, "WRITE", "group", "AllUsers");
        break;
    case 3: add(a, "READ", "group", "AuthenticatedUsers"); break;
    case 6:
        add(a, "WRITE", "group", "LogDelivery");
        add(a, "READ_ACP", "group", "LogDelivery");
        break;
    }
    add(a, "FULL_CONTROL", "key", owner ? owner : "");
    if (k == 7)
        add(a, "READ", "id", S3ACL_EC2_ID);
    else if (k == 4)
        add(a, "READ", "key", bo);
    else if (k == 5)
        add(a, "FULL_CONTROL", "key", bo);
    return a;
}

struct grantee_err {
    enum s3e code;
    char *msg;
    size_t msglen;
};

/* Add perm to who (a what: "key", "group" or "id"), within the limit. */
static int grant_to(json_t *a, const char *perm, const char *what, const char *who,
                    struct grantee_err *e)
{
    if (json_array_size(a) >= S3ACL_GRANTS_MAX) {
        e->code = S3E_MALFORMED_ACL;
        snprintf(e->msg, e->msglen, "an ACL has at most %d grants", S3ACL_GRANTS_MAX);
        return -1;
    }
    add(a, perm, what, who);
    return 0;
}

/* Add perm to the grantee named by an ID, an email or a group URI. */
static int grantee(json_t *a, const char *perm, const char *id, const char *email,
                   const char *uri, struct grantee_err *e)
{
    if ((id != NULL) + (email != NULL) + (uri != NULL) != 1) {
        e->code = S3E_MALFORMED_ACL;
        snprintf(e->msg, e->msglen, "a grantee is one ID, EmailAddress or URI");
        return -1;
    }
    const char *key = id ? s3user_by_id(id) : email ? s3user_by_email(email) : NULL;
    const char *group = uri ? group_of_uri(uri) : NULL;
    if (id && !key && !strcmp(id, S3_OWNER_ID))
        key = "";                /* Shoal's one owner, when no key owns it */
    if (id && !key && !strcmp(id, S3ACL_EC2_ID))
        return grant_to(a, perm, "id", id, e);
    if (!key && !group) {
        e->code = email ? S3E_UNRESOLVABLE_EMAIL : S3E_INVALID_ARGUMENT;
        snprintf(e->msg, e->msglen, email ? "The e-mail address you provided does not match "
                                            "any account on record: %.80s"
                                  : id ? "Invalid id: %.80s"
                                       : "Invalid group uri: %.80s",
                 id ? id : email ? email : uri);
        return -1;
    }
    return grant_to(a, perm, key ? "key" : "group", key ? key : group, e);
}

/* One x-amz-grant-* value: id="..", emailAddress="..", uri="..", comma
 * separated. */
static int header_grants(json_t *a, const char *perm, const char *v, struct grantee_err *e)
{
    char *copy = xstrdup(v), *save = NULL;
    int rc = 0;
    for (char *item = strtok_r(copy, ",", &save); item && !rc;
         item = strtok_r(NULL, ",", &save)) {
        item += strspn(item, " \t");
        char *eq = strchr(item, '=');
        if (!eq) {
            e->code = S3E_INVALID_ARGUMENT;
            snprintf(e->msg, e->msglen, "a grant is id=, emailAddress= or uri=: %.80s", item);
            rc = -1;
            break;
        }
        *eq = '\0';
        char *k = item, *val = eq + 1;
        size_t kl = strlen(k);
        while (kl && strchr(" \t", k[kl - 1]))
            k[--kl] = '\0';
        val += strspn(val, " \t");
        size_t vl = strlen(val);
        while (vl && strchr(" \t", val[vl - 1]))
            val[--vl] = '\0';
        if (vl >= 2 && val[0] == '"' && val[vl - 1] == '"') {
            val[vl - 1] = '\0';
            val++;
        }
        int is_id = !strcasecmp(k, "id"), is_email = !strcasecmp(k, "emailAddress"),
            is_uri = !strcasecmp(k, "uri");
        if (!is_id && !is_email && !is_uri) {
            e->code = S3E_INVALID_ARGUMENT;
            snprintf(e->msg, e->msglen, "a grantee is named by id, emailAddress or uri, not "
                                        "%.40s", k);
            rc = -1;
            break;
        }
        rc = grantee(a, perm, is_id ? val : NULL, is_email ? val : NULL, is_uri ? val : NULL, e);
    }
    free(copy);
    return rc;
}

struct body_ctx {
    json_t *grants;
    struct grantee_err *e;
    int failed;
};

/* One Grant: Grantee/ID, Grantee/URI, Grantee/EmailAddress, Permission. */
static int body_grant(void *arg, char **f, char *err, size_t errlen)
{
    struct body_ctx *c = arg;
    if (!perm_bits(f[3])) {
        c->e->code = S3E_MALFORMED_ACL;
        snprintf(err, errlen, "a Permission is READ, WRITE, READ_ACP, WRITE_ACP or "
                              "FULL_CONTROL");
        c->failed = 1;
        return -1;
    }
    if (grantee(c->grants, f[3], f[0], f[2], f[1], c->e)) {
        snprintf(err, errlen, "%s", c->e->msg);
        c->failed = 1;
        return -1;
    }
    return 0;
}

/* a's grants, the groups' first (as S3 lists them), each side in its
 * order; takes a. */
static json_t *groups_first(json_t *a)
{
    json_t *out = json_array();
    for (int pass = 0; pass < 2; pass++) {
        size_t i;
        json_t *g;
        json_array_foreach(a, i, g)
            if ((json_object_get(g, "group") != NULL) == !pass)
                json_array_append(out, g);
    }
    json_decref(a);
    return out;
}

static int fail(enum s3e *code, enum s3e e, char *msg, size_t msglen, const char *text)
{
    *code = e;
    snprintf(msg, msglen, "%s", text);
    return err_s3_status(e);
}

int s3acl_of_request(const struct http_req *r, const char *body, size_t len, int body_ok,
                     const char *owner, const char *bucket_owner, json_t **grants,
                     enum s3e *code, char *msg, size_t msglen)
{
    *grants = NULL;
    const char *canned = http_req_header(r, "x-amz-acl");
    int any_grant = 0;
    for (size_t i = 0; i < ARRAY_LEN(grant_headers); i++)
        any_grant |= http_req_header(r, grant_headers[i].header) != NULL;
    if (canned && any_grant)
        return fail(code, S3E_INVALID_REQUEST, msg, msglen,
                    "Specifying both Canned ACLs and Header Grants is not allowed");
    if ((canned || any_grant) && body_ok && len)
        return fail(code, S3E_UNEXPECTED_CONTENT, msg, msglen,
                    "This request does not support content: an ACL by headers takes no body");
    if (canned) {
        if (!(*grants = s3acl_canned(canned, owner, bucket_owner))) {
            *code = S3E_INVALID_ARGUMENT;
            snprintf(msg, msglen, "unknown canned ACL: %.64s", canned);
            return err_s3_status(*code);
        }
        return 0;
    }
    struct grantee_err e = {S3E_INVALID_ARGUMENT, msg, msglen};
    if (any_grant) {
        json_t *a = json_array();
        for (size_t i = 0; i < ARRAY_LEN(grant_headers); i++) {
            const char *v = http_req_header(r, grant_headers[i].header);
            if (v && header_grants(a, grant_headers[i].perm, v, &e)) {
                json_decref(a);
                *code = e.code;
                return err_s3_status(*code);
            }
        }
        *grants = groups_first(a);
        return 0;
    }
    if (!body_ok || !len)
        return 0;
    static const struct s3xml_spec spec = {
        "AccessControlPolicy", "AccessControlList/Grant",
        {"Grantee/ID", "Grantee/URI", "Grantee/EmailAddress", "Permission"}, 4, "Owner/ID", 0};
    char gmsg[200];
    struct grantee_err be = {S3E_MALFORMED_ACL, gmsg, sizeof(gmsg)};
    struct body_ctx c = {json_array(), &be, 0};
    char oid[S3XML_FLAG_MAX];
    int n = s3xml_records(body, len, &spec, body_grant, &c, oid, msg, msglen);
    if (n < 0) {
        json_decref(c.grants);
        *code = c.failed ? be.code : S3E_MALFORMED_ACL;
        return err_s3_status(*code);
    }
    *grants = groups_first(c.grants);
    return 0;
}

json_t *s3acl_grants(const json_t *kept, const char *owner)
{
    if (json_is_array(kept))
        return json_incref((json_t *)kept);
    json_t *a = json_is_string(kept) ? s3acl_canned(json_string_value(kept), owner, owner) : NULL;
    return a ? a : s3acl_canned("private", owner, owner);
}

json_t *s3acl_grants_text(const char *kept, const char *owner)
{
    if (kept && kept[0] == '[') {
        json_t *a = json_loads(kept, JSON_REJECT_DUPLICATES, NULL);
        if (a && !s3acl_check(a, NULL, 0))
            return a;
        json_decref(a);  /* never written so: the owner's alone */
        return s3acl_canned("private", owner, owner);
    }
    json_t *s = kept ? json_string(kept) : NULL;
    json_t *a = s3acl_grants(s, owner);
    json_decref(s);
    return a;
}

int s3acl_check(const json_t *kept, char *err, size_t errlen)
{
    json_t *probe = json_is_string(kept) ? s3acl_canned(json_string_value(kept), NULL, NULL)
                                         : NULL;
    if (probe) {
        json_decref(probe);
        return 0;
    }
    int ok = json_is_array(kept) && json_array_size(kept) <= S3ACL_GRANTS_MAX;
    size_t i;
    json_t *g;
    json_array_foreach(kept, i, g) {
        const json_t *key = json_object_get(g, "key"), *group = json_object_get(g, "group");
        const json_t *id = json_object_get(g, "id");
        ok = ok && json_is_object(g) && perm_bits(json_string_value(json_object_get(g, "perm"))) &&
             json_object_size(g) == 2 && (key != NULL) + (group != NULL) + (id != NULL) == 1 &&
             (key     ? json_is_string(key)
              : group ? known_group(json_string_value(group))
                      : json_is_string(id) && !strcmp(json_string_value(id), S3ACL_EC2_ID));
    }
    if (!ok && err)
        snprintf(err, errlen, "acl is a canned ACL's name or at most %d grants "
                              "[{\"perm\": \"READ\", \"key\": ACCESS | \"group\": \"AllUsers\" | \"id\": EC2}]",
                 S3ACL_GRANTS_MAX);
    return ok ? 0 : -1;
}

unsigned s3acl_perms(const json_t *grants, const char *who, int ignore_public)
{
    unsigned bits = 0;
    size_t i;
    json_t *g;
    json_array_foreach(grants, i, g) {
        const char *key = json_string_value(json_object_get(g, "key"));
        const char *group = json_string_value(json_object_get(g, "group"));
        int to = key ? who && *key && !strcmp(key, who)
                     : group && !ignore_public &&
                           (!strcmp(group, "AllUsers") ||
                            (who && !strcmp(group, "AuthenticatedUsers")));
        if (to)
            bits |= perm_bits(json_string_value(json_object_get(g, "perm")));
    }
    return bits;
}

int s3acl_public(const json_t *grants)
{
    size_t i;
    json_t *g;
    json_array_foreach(grants, i, g) {
        const char *group = json_string_value(json_object_get(g, "group"));
        if (group && (!strcmp(group, "AllUsers") || !strcmp(group, "AuthenticatedUsers")))
            return 1;
    }
    return 0;
}

int s3acl_private(const json_t *grants, const char *owner)
{
    json_t *g = json_array_get(grants, 0);
    const char *key = json_string_value(json_object_get(g, "key"));
    return json_array_size(grants) == 1 && key && !strcmp(key, owner ? owner : "") &&
           perm_bits(json_string_value(json_object_get(g, "perm"))) == S3ACL_FULL;
}

#define XSI "xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" "

void s3acl_xml(struct gbuf *b, const char *owner, const json_t *grants)
{
    char id[S3USER_ID_MAX];
    gbuf_str(b, S3_XML_HEAD "<AccessControlPolicy xmlns=\"" S3_NS "\"><Owner>");
    if (owner && *owner) {
        s3_xml_elem(b, "ID", s3user_id(owner, id, sizeof(id)));
        s3_xml_elem(b, "DisplayName", s3user_name(owner));
    } else {
        s3_xml_elem(b, "ID", S3_OWNER_ID);
        s3_xml_elem(b, "DisplayName", S3_OWNER_ID);
    }
    gbuf_str(b, "</Owner><AccessControlList>");
    size_t i;
    json_t *g;
    json_array_foreach(grants, i, g) {
        const char *key = json_string_value(json_object_get(g, "key"));
        const char *group = json_string_value(json_object_get(g, "group"));
        if (key && *key) {
            gbuf_str(b, "<Grant><Grantee " XSI "xsi:type=\"CanonicalUser\">");
            s3_xml_elem(b, "ID", s3user_id(key, id, sizeof(id)));
            s3_xml_elem(b, "DisplayName", s3user_name(key));
        } else if (key) {
            gbuf_str(b, "<Grant><Grantee " XSI "xsi:type=\"CanonicalUser\">");
            s3_xml_elem(b, "ID", S3_OWNER_ID);
            s3_xml_elem(b, "DisplayName", S3_OWNER_ID);
        } else if (json_is_string(json_object_get(g, "id"))) {
            gbuf_str(b, "<Grant><Grantee " XSI "xsi:type=\"CanonicalUser\">");
            s3_xml_elem(b, "ID", S3ACL_EC2_ID);
            s3_xml_elem(b, "DisplayName", S3ACL_EC2_NAME);
        } else {
            gbuf_str(b, "<Grant><Grantee " XSI "xsi:type=\"Group\">");
            for (size_t k = 0; k < ARRAY_LEN(groups); k++)
                if (group && !strcmp(group, groups[k].name))
                    s3_xml_elem(b, "URI", groups[k].uri);
        }
        gbuf_str(b, "</Grantee>");
        s3_xml_elem(b, "Permission", json_string_value(json_object_get(g, "perm")));
        gbuf_str(b, "</Grant>");
    }
    gbuf_str(b, "</AccessControlList></AccessControlPolicy>\n");
}
