/* sys/sysmacros.h for the Windows build: st_dev is the drive number there,
 * so the "device" a key names is the drive. */
#ifndef SL_COMPAT_SYSMACROS_H
#define SL_COMPAT_SYSMACROS_H
#define major(dev) ((unsigned)(dev))
#define minor(dev) (0u * (unsigned)(dev))
#endif
