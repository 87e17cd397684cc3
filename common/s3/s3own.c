/*
 * s3own: bucket ownership and canned ACLs (see s3own.h).
 */
#include "s3own.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "authz.h"
#include "bmd.h"
#include "http.h"
#include "s3.h"
#include "s3acl.h"
#include "s3user.h"
#include "s3xml.h"
#include "util.h"

void s3own_xml(struct gbuf *b, const char *owner)
{
    char id[S3USER_ID_MAX];
    int none = !owner || !*owner;
    s3_xml_elem(b, "ID", none ? S3_OWNER_ID : s3user_id(owner, id, sizeof(id)));
    s3_xml_elem(b, "DisplayName", none ? S3_OWNER_ID : s3user_name(owner));
}

void s3own_of_bucket(const char *name, char *out, size_t n)
{
    struct bmd *m = bmd_current();
    const struct bmd_bucket *bk = m ? bmd_find(m, BMD_PROVIDER_SHOAL, name) : NULL;
    const char *owner = bk ? s3own_owner(bk->props) : NULL;
    snprintf(out, n, "%s", owner ? owner : "");
    bmd_unref(m);
}

const char *s3own_owner(const json_t *props)
{
    return json_string_value(json_object_get(props, "owner"));
}

static int pab(const json_t *props, const char *setting)
{
    return json_is_true(json_object_get(json_object_get(props, "public_access_block"), setting));
}

int s3own_ignore_public(const json_t *props)
{
    return pab(props, "ignore_public_acls");
}

int s3own_block_public(const json_t *props)
{
    return pab(props, "block_public_acls");
}

const char *s3own_ownership(const json_t *props)
{
    return json_string_value(json_object_get(props, "object_ownership"));
}

int s3own_acls_disabled(const json_t *props)
{
    const char *o = s3own_ownership(props);
    return o && !strcmp(o, "BucketOwnerEnforced");
}

const char *s3own_object_owner(const json_t *props, const char *writer, const json_t *grants)
{
    const char *bo = s3own_owner(props), *o = s3own_ownership(props);
    if (!writer || !bo || !strcmp(writer, bo) || (o && !strcmp(o, "BucketOwnerEnforced")))
        return bo;
    if (o && !strcmp(o, "BucketOwnerPreferred") &&
        (s3acl_perms(grants, bo, 0) & S3ACL_FULL) == S3ACL_FULL)
        return bo;
    return writer;
}

int s3own_ownership_valid(const char *v)
{
    return v && (!strcmp(v, "BucketOwnerEnforced") || !strcmp(v, "BucketOwnerPreferred") ||
                 !strcmp(v, "ObjectWriter"));
}

/* The four settings: their XML names and property names. */
static const char *const pab_xml[] = {"BlockPublicAcls", "IgnorePublicAcls",
                                      "BlockPublicPolicy", "RestrictPublicBuckets"};
static const char *const pab_prop[] = {"block_public_acls", "ignore_public_acls",
                                       "block_public_policy", "restrict_public_buckets"};

int s3own_pab_parse(const char *body, size_t len, json_t **pab, enum s3e *code, char *msg,
                    size_t msglen)
{
    *pab = json_object();
    for (size_t i = 0; i < ARRAY_LEN(pab_xml); i++) {
        /* one flat element a pass: the document is at most a few hundred bytes */
        const struct s3xml_spec spec = {"PublicAccessBlockConfiguration", NULL, {NULL}, 0,
                                        pab_xml[i], 0};
        char v[S3XML_FLAG_MAX] = "";
        int bad = s3xml_records(body, len, &spec, NULL, NULL, v, msg, msglen) < 0;
        if (!bad && v[0] && strcasecmp(v, "true") && strcasecmp(v, "false")) {
            snprintf(msg, msglen, "%s must be true or false", pab_xml[i]);
            bad = 1;
        }
        if (bad) {
            json_decref(*pab);
            *pab = NULL;
            *code = S3E_MALFORMED_XML;
            return err_s3_status(*code);
        }
        json_object_set_new(*pab, pab_prop[i], json_boolean(!strcasecmp(v, "true")));
    }
    return 0;
}

int s3own_pab_check(const json_t *pab, char *err, size_t errlen)
{
    int ok = json_is_object(pab);
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)pab, k, v) {
        int known = 0;
        for (size_t i = 0; i < ARRAY_LEN(pab_prop); i++)
            known |= !strcmp(k, pab_prop[i]);
        ok = ok && known && json_is_boolean(v);
    }
    if (!ok)
        snprintf(err, errlen, "public_access_block is {\"block_public_acls\", "
                              "\"ignore_public_acls\", \"block_public_policy\", "
                              "\"restrict_public_buckets\"}, each true or false");
    return ok ? 0 : -1;
}

void s3own_pab_xml(struct gbuf *b, const json_t *pab)
{
    gbuf_str(b, S3_XML_HEAD "<PublicAccessBlockConfiguration xmlns=\"" S3_NS "\">");
    for (size_t i = 0; i < ARRAY_LEN(pab_xml); i++)
        s3_xml_elem(b, pab_xml[i],
                    json_is_true(json_object_get(pab, pab_prop[i])) ? "true" : "false");
    gbuf_str(b, "</PublicAccessBlockConfiguration>\n");
}

struct ownership_ctx {
    char rule[S3XML_FLAG_MAX];
    int rules;
};

static int ownership_rule(void *arg, char **f, char *err, size_t errlen)
{
    struct ownership_ctx *c = arg;
    if (++c->rules > 1 || !s3own_ownership_valid(f[0])) {
        snprintf(err, errlen, "OwnershipControls has one Rule, whose ObjectOwnership is "
                              "BucketOwnerEnforced, BucketOwnerPreferred or ObjectWriter");
        return -1;
    }
    snprintf(c->rule, sizeof(c->rule), "%s", f[0]);
    return 0;
}

int s3own_ownership_parse(const char *body, size_t len, json_t **ownership, enum s3e *code,
                          char *msg, size_t msglen)
{
    static const struct s3xml_spec spec = {"OwnershipControls", "Rule", {"ObjectOwnership"}, 1,
                                           NULL, 0};
    struct ownership_ctx c = {"", 0};
    *ownership = NULL;
    if (s3xml_records(body, len, &spec, ownership_rule, &c, NULL, msg, msglen) != 1) {
        if (!c.rules)
            snprintf(msg, msglen, "OwnershipControls needs a Rule");
        *code = S3E_MALFORMED_XML;
        return err_s3_status(*code);
    }
    *ownership = json_string(c.rule);
    return 0;
}

void s3own_ownership_xml(struct gbuf *b, const char *ownership)
{
    gbuf_str(b, S3_XML_HEAD "<OwnershipControls xmlns=\"" S3_NS "\"><Rule>");
    s3_xml_elem(b, "ObjectOwnership", ownership);
    gbuf_str(b, "</Rule></OwnershipControls>\n");
}

char *s3own_writer_query(const struct authz_who *who, const char *bucket)
{
    char owner[128];
    if (!who->enforced || !who->access || who->admin)
        return xstrdup("");      /* an admin key writes for the bucket's owner */
    s3own_of_bucket(bucket, owner, sizeof(owner));
    if (!owner[0] || !strcmp(owner, who->access))
        return xstrdup("");
    char *enc = http_pct_encode(who->access, strlen(who->access), 0);
    char *q = xasprintf(S3OWN_WRITER "=%s", enc);
    free(enc);
    return q;
}

char *s3own_who_query(const struct authz_who *who)
{
    const char *a = who->access ? who->access : "";
    char *enc = http_pct_encode(a, strlen(a), 0);
    char *q = xasprintf(S3OWN_WHO "=%s", enc);
    free(enc);
    return q;
}
