/*
 * version: what this build is (--version). The version is the Makefile's
 * VERSION; the revision is the git commit the build was made from, with
 * "-dirty" when the tree had changes, or "unknown" outside a checkout.
 */
#ifndef SHOAL_VERSION_H
#define SHOAL_VERSION_H

/* "VERSION (git REVISION)" */
const char *shoal_version(void);

#endif
