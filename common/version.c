/*
 * version: the build's version and git revision (see version.h), given by
 * the Makefile (-DSHOAL_VERSION, -DSHOAL_GIT_REV).
 */
#include "version.h"

#ifndef SHOAL_VERSION
#define SHOAL_VERSION "0"
#endif
#ifndef SHOAL_GIT_REV
#define SHOAL_GIT_REV "unknown"
#endif

const char *shoal_version(void)
{
    return SHOAL_VERSION " (git " SHOAL_GIT_REV ")";
}
