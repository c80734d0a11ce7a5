// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.24;

/// @title AddressSet
/// @notice An enumerable set of addresses: O(1) add, remove and membership, and paged reads.
/// Removal moves the last item into the freed slot, so enumeration order is not stable
/// across removals.
library AddressSet {
    struct Set {
        address[] items;
        /// @dev index + 1 of each member in `items`; 0 means absent.
        mapping(address => uint256) position;
    }

    function add(Set storage set, address item) internal returns (bool) {
        if (set.position[item] != 0) return false;
        set.items.push(item);
        set.position[item] = set.items.length;
        return true;
    }

    function remove(Set storage set, address item) internal returns (bool) {
        uint256 position = set.position[item];
        if (position == 0) return false;
        uint256 last = set.items.length;
        if (position != last) {
            address moved = set.items[last - 1];
            set.items[position - 1] = moved;
            set.position[moved] = position;
        }
        set.items.pop();
        delete set.position[item];
        return true;
    }

    function contains(Set storage set, address item) internal view returns (bool) {
        return set.position[item] != 0;
    }

    function length(Set storage set) internal view returns (uint256) {
        return set.items.length;
    }

    /// @notice Items `offset` to `offset + limit` (exclusive), clipped to the set's end.
    function page(Set storage set, uint256 offset, uint256 limit)
        internal
        view
        returns (address[] memory out)
    {
        (uint256 start, uint256 end) = bounds(set.items.length, offset, limit);
        out = new address[](end - start);
        for (uint256 i = start; i < end; ++i) {
            out[i - start] = set.items[i];
        }
    }

    function bounds(uint256 size, uint256 offset, uint256 limit)
        internal
        pure
        returns (uint256 start, uint256 end)
    {
        start = offset < size ? offset : size;
        end = limit < size - start ? start + limit : size;
    }
}

/// @title Bytes32Set
/// @notice The same as {AddressSet}, for 32-byte ids.
library Bytes32Set {
    struct Set {
        bytes32[] items;
        mapping(bytes32 => uint256) position;
    }

    function add(Set storage set, bytes32 item) internal returns (bool) {
        if (set.position[item] != 0) return false;
        set.items.push(item);
        set.position[item] = set.items.length;
        return true;
    }

    function remove(Set storage set, bytes32 item) internal returns (bool) {
        uint256 position = set.position[item];
        if (position == 0) return false;
        uint256 last = set.items.length;
        if (position != last) {
            bytes32 moved = set.items[last - 1];
            set.items[position - 1] = moved;
            set.position[moved] = position;
        }
        set.items.pop();
        delete set.position[item];
        return true;
    }

    function contains(Set storage set, bytes32 item) internal view returns (bool) {
        return set.position[item] != 0;
    }

    function length(Set storage set) internal view returns (uint256) {
        return set.items.length;
    }

    function page(Set storage set, uint256 offset, uint256 limit)
        internal
        view
        returns (bytes32[] memory out)
    {
        (uint256 start, uint256 end) = AddressSet.bounds(set.items.length, offset, limit);
        out = new bytes32[](end - start);
        for (uint256 i = start; i < end; ++i) {
            out[i - start] = set.items[i];
        }
    }
}
