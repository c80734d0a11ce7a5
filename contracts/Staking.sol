// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.24;

import {Ownable} from "./Ownable.sol";

/// @title Staking
/// @notice The canonical stake of every account, in the chain's native currency. Readers take
/// stake from this contract only (never from ads, routers or the Registry). A provider is
/// bonded when the Registry lists it active and `stakeOf(provider) >= minProviderBond`.
///
/// Unstaking takes effect at once for `stakeOf` and `totalStaked`; the funds stay locked for
/// `unbondingPeriod` seconds before `withdraw` releases them.
contract Staking is Ownable {
    /// @notice Longest unbonding period the owner may set.
    uint256 public constant MAX_UNBONDING_PERIOD = 30 days;

    struct Unbonding {
        uint256 amount;
        uint256 releaseAt;
    }

    mapping(address => uint256) public stakeOf;
    uint256 public totalStaked;
    uint256 public minProviderBond;
    uint256 public unbondingPeriod;
    mapping(address => Unbonding) public unbondingOf;

    event Staked(address indexed account, address indexed funder, uint256 amount);
    event UnstakeRequested(address indexed account, uint256 amount, uint256 releaseAt);
    event Withdrawn(address indexed account, uint256 amount);
    event MinProviderBondChanged(uint256 previous, uint256 current);
    event UnbondingPeriodChanged(uint256 previous, uint256 current);

    error ZeroAmount();
    error InsufficientStake(uint256 requested, uint256 available);
    error LengthMismatch(uint256 accounts, uint256 amounts);
    error ValueMismatch(uint256 sent, uint256 expected);
    error NothingToWithdraw();
    error StillUnbonding(uint256 releaseAt);
    error UnbondingPeriodTooLong(uint256 period, uint256 max);
    error TransferFailed(address to, uint256 amount);

    constructor(address initialOwner, uint256 minBond, uint256 period) Ownable(initialOwner) {
        if (period > MAX_UNBONDING_PERIOD) revert UnbondingPeriodTooLong(period, MAX_UNBONDING_PERIOD);
        minProviderBond = minBond;
        unbondingPeriod = period;
        emit MinProviderBondChanged(0, minBond);
        emit UnbondingPeriodChanged(0, period);
    }

    /// @notice Adds `msg.value` to the caller's stake.
    function stake() external payable {
        _stake(msg.sender, msg.value);
    }

    /// @notice Adds `msg.value` to `account`'s stake.
    function stakeFor(address account) external payable {
        _stake(account, msg.value);
    }

    /// @notice Adds `amounts[i]` to `accounts[i]`'s stake; `msg.value` must be their sum.
    /// Open to anyone, like {stakeFor}: the caller pays for every stake it adds.
    function stakeForMany(address[] calldata accounts, uint256[] calldata amounts)
        external
        payable
    {
        if (accounts.length != amounts.length) revert LengthMismatch(accounts.length, amounts.length);
        uint256 sum = 0;
        for (uint256 i = 0; i < accounts.length; ++i) {
            _stake(accounts[i], amounts[i]);
            sum += amounts[i];
        }
        if (sum != msg.value) revert ValueMismatch(msg.value, sum);
    }

    /// @notice Moves `amount` of the caller's stake into unbonding; it can be withdrawn
    /// `unbondingPeriod` seconds after the latest request.
    function unstake(uint256 amount) external {
        if (amount == 0) revert ZeroAmount();
        uint256 available = stakeOf[msg.sender];
        if (amount > available) revert InsufficientStake(amount, available);
        stakeOf[msg.sender] = available - amount;
        totalStaked -= amount;
        Unbonding storage pending = unbondingOf[msg.sender];
        pending.amount += amount;
        pending.releaseAt = block.timestamp + unbondingPeriod;
        emit UnstakeRequested(msg.sender, amount, pending.releaseAt);
    }

    /// @notice Pays out the caller's unbonded funds once the unbonding period has passed.
    function withdraw() external {
        Unbonding memory pending = unbondingOf[msg.sender];
        if (pending.amount == 0) revert NothingToWithdraw();
        if (block.timestamp < pending.releaseAt) revert StillUnbonding(pending.releaseAt);
        delete unbondingOf[msg.sender];
        emit Withdrawn(msg.sender, pending.amount);
        (bool ok,) = msg.sender.call{value: pending.amount}("");
        if (!ok) revert TransferFailed(msg.sender, pending.amount);
    }

    /// @notice The stakes of many accounts at once, in the order given.
    function stakesOf(address[] calldata accounts) external view returns (uint256[] memory stakes) {
        stakes = new uint256[](accounts.length);
        for (uint256 i = 0; i < accounts.length; ++i) {
            stakes[i] = stakeOf[accounts[i]];
        }
    }

    function setMinProviderBond(uint256 minBond) external onlyOwner {
        emit MinProviderBondChanged(minProviderBond, minBond);
        minProviderBond = minBond;
    }

    function setUnbondingPeriod(uint256 period) external onlyOwner {
        if (period > MAX_UNBONDING_PERIOD) revert UnbondingPeriodTooLong(period, MAX_UNBONDING_PERIOD);
        emit UnbondingPeriodChanged(unbondingPeriod, period);
        unbondingPeriod = period;
    }

    function _stake(address account, uint256 amount) private {
        if (account == address(0)) revert ZeroAddress();
        if (amount == 0) revert ZeroAmount();
        stakeOf[account] += amount;
        totalStaked += amount;
        emit Staked(account, msg.sender, amount);
    }
}
