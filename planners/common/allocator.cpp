#include "planners/common/allocator.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace hippie {

bool keepFreedMemoryForReuse(int64_t kept_free_bytes) {
#if defined(__GLIBC__)
    // Setting either also turns off glibc's own adjustment of both (which raises the mmap
    // threshold only after a large block was freed, and the trim threshold with it).
    const bool trim = mallopt(M_TRIM_THRESHOLD, static_cast<int>(kept_free_bytes)) == 1;
    const bool mmap = mallopt(M_MMAP_THRESHOLD, static_cast<int>(kMappedAboveBytes)) == 1;
    return trim && mmap;
#else
    (void)kept_free_bytes;
    return false;
#endif
}

bool shareOneMallocArena() {
#if defined(__GLIBC__)
    return mallopt(M_ARENA_MAX, 1) == 1;
#else
    return false;
#endif
}

void releaseFreedMemory() {
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
}

}  // namespace hippie
